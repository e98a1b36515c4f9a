// What the drill-down says about its filter: the panel's title, its note
// and the cancel dialog name the same set of requests in the same words.

import { formatWait } from "./format.js";

export function describe(filter) {
  const bits = [];
  if (filter.tenant) bits.push(`tenant ${filter.tenant}`);
  if (filter.component) bits.push(filter.component);
  if (filter.priority !== undefined && filter.priority !== null && filter.priority !== "") bits.push(`priority ${filter.priority}`);
  if (filter.actor) bits.push(`actor ${filter.actor}`);
  return bits.length ? bits.join(" / ") : "the whole queue";
}

// The filters beyond the node ("" without any), as the boxes set them.
export function narrowing(filter) {
  const bits = [];
  if (filter.search) bits.push(`whose query contains “${filter.search}”`);
  if (filter.regex) bits.push(`whose query matches /${filter.regex}/`);
  if (filter.min_wait !== undefined) bits.push(`waited ≥ ${formatWait(filter.min_wait)}`);
  return bits.join(", ");
}

export function title(filter) {
  const what = { queued: "Queued requests", in_flight: "Running requests" }[filter.state] || "Requests";
  const more = narrowing(filter);
  return `${what} of ${describe(filter)}${more ? ` ${more}` : ""}`;
}

// The order of the rows, for the state the list holds.
export function orderNote(state) {
  if (state === "queued") return "Queued requests in the order the scheduler will dequeue them.";
  if (state === "in_flight") return "Running requests, longest running first.";
  return "Queued requests in the order the scheduler will dequeue them, then running ones (longest first).";
}
