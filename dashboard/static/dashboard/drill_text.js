// What the drill-down says about its filter: the panel's title and the
// cancel dialog name the same set of requests in the same words.

export function describe(filter) {
  const bits = [];
  if (filter.tenant) bits.push(`tenant ${filter.tenant}`);
  if (filter.component) bits.push(filter.component);
  if (filter.priority !== undefined && filter.priority !== null && filter.priority !== "") bits.push(`priority ${filter.priority}`);
  if (filter.actor) bits.push(`actor ${filter.actor}`);
  return bits.length ? bits.join(" / ") : "the whole queue";
}
