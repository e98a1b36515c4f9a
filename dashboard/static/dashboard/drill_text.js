// What the drill-down says about its filter: the panel's title, its note
// and the cancel dialog name the same set of requests in the same words.
// Names, ids and the boxes' text go in through format.js's iso: a bidi
// control in one would reorder the sentence around it.

import { clockTime, iso, spellDuration } from "./format.js";

// Each filter field's name on the page, for the server's refusals.
export const FIELD_NAMES = { search: "Search", regex: "RE2 regex", actor: "Actor", state: "State", priority: "Priority", min_wait: "Waited ≥" };

export function describe(filter) {
  const bits = [];
  if (filter.tenant) bits.push(`tenant ${iso(filter.tenant)}`);
  if (filter.component) bits.push(iso(filter.component));
  if (filter.priority !== undefined && filter.priority !== null && filter.priority !== "") bits.push(`priority ${iso(filter.priority)}`);
  if (filter.actor) bits.push(`actor ${iso(filter.actor)}`);
  return bits.length ? bits.join(" / ") : "the whole queue";
}

// The filters beyond the node ("" without any), as the boxes set them.
export function narrowing(filter) {
  const bits = [];
  if (filter.search) bits.push(`whose query contains “${iso(filter.search)}”`);
  if (filter.regex) bits.push(`whose query matches /${iso(filter.regex)}/`);
  // The number as typed, to the microsecond: the server filters by it, not by a wait's rounding.
  if (filter.min_wait !== undefined) bits.push(`waited ≥ ${spellDuration(filter.min_wait, 1e-6, true)}`);
  return bits.join(", ");
}

export function title(filter) {
  const what = { queued: "Queued requests", in_flight: "Running requests" }[filter.state] || "Requests";
  const more = narrowing(filter);
  return `${what} of ${describe(filter)}${more ? ` ${more}` : ""}`;
}

// Why the drill lists nothing, for `f` (the panel's filter), a frame's
// `section` and the replicas `missing` from it. With every request of the
// node (as the actor, priority and state boxes narrow it) counted, on every
// replica, none is there: its queue emptied (dispatched, cancelled) or has
// not filled yet. Said so, and that the panel stays on it, rather than "No
// request matches", which read as a filter's doing. Else the search or the
// wait box matches none, or a replica's rows are missing: no more is known.
export function emptyText(f, section, missing) {
  const whole = section.exact && !section.replicas_pending && !missing.length && section.total === 0;
  if (!whole || f.search || f.regex || f.min_wait !== undefined) return "No request matches.";
  const what = { queued: "queued", in_flight: "running" }[f.state] || "queued or running";
  const who = describe(f);
  return `${who[0].toUpperCase()}${who.slice(1)} has nothing ${what} now. ` +
    "The panel stays on it: its requests are listed here as they arrive.";
}

// The order of the rows, for the state the list holds.
export function orderNote(state) {
  if (state === "queued") return "Queued requests in the order the scheduler will dequeue them.";
  if (state === "in_flight") return "Running requests, longest running first.";
  return "Queued requests in the order the scheduler will dequeue them, then running ones (longest first).";
}

// A text search over a node bigger than a tick's scan budget is counted
// over several ticks (dashboard/drill_scan.py): until one count finishes the
// page says "at least N"; after, the finished count, and the note when.
function countedAt(section) {
  return typeof section.counted_at === "number" ? section.counted_at : null;
}

// The count line is a polite live region: it names no time, so a count
// finished again every few ticks is announced only when its number changes
// (the note under the list says when).
export function countText(section, listed) {
  if (countedAt(section) !== null) return `${listed} of ${section.total} (last full count)`;
  return `${listed} of ${section.exact ? "" : "at least "}${section.total}`;
}

export function countNote(section, state) {
  if (section.exact) return orderNote(state);
  const at = countedAt(section);
  if (at !== null) {
    return `Searching query text is spread over several ticks: the count is the last one finished, at ${clockTime(at)}, ` +
      "and is counted again while this panel is open. The rows listed may stop short of the oldest matches.";
  }
  return "The search stopped after a bounded scan this tick: counts are a lower bound. Narrow the node or the search.";
}

const LISTED = 8; // names listed before "and N more"

function names(ids) {
  const shown = ids.slice(0, LISTED).map(iso);
  const more = ids.length - shown.length;
  const list = shown.length > 1 ? `${shown.slice(0, -1).join(", ")} and ${shown.at(-1)}` : shown[0] || "";
  return more > 0 ? `${shown.join(", ")} and ${more} more` : list;
}

const queriers = (n) => `${n} ${n === 1 ? "querier" : "queriers"}`;

// Who may serve a tenant (api.wire.queue_rows.serving_body): its shard, and
// the queriers Cortex's reservations keep for its higher priorities, which
// leave its lower ones to the rest. "" when nothing narrows it.
// `below`, when known, counts the requests that would wait for the rest:
// {count, sample} of a dry run's sampled requests.
export function servingText(tenant, serving, below = null) {
  if (!serving) return "";
  const { shard, queriers: known, reserved } = serving;
  const pool = shard ? shard.length : known;
  if (!shard && !reserved.length) return "";
  const who = iso(tenant);
  let text = shard
    ? `${who} is served by ${queriers(shard.length)} of ${known} (its shuffle shard): ${names(shard)}.`
    : `Any of the ${queriers(known)} may serve ${who}.`;
  if (!reserved.length) return text;
  const kept = new Set(reserved.flatMap(([, ids]) => ids));
  const lowest = Math.min(...reserved.map(([p]) => p));
  const each = reserved.map(([p, ids]) => `${names(ids)} ${ids.length === 1 ? "takes" : "take"} only its priority ${p} and above`);
  const rest = shard ? shard.filter((id) => !kept.has(id)) : null;
  const left = rest ? `${names(rest)} (${queriers(rest.length)})` : `the other ${queriers(pool - kept.size)}`;
  const share = below ? ` (${below.count} of the ${below.sample} sampled)` : "";
  text += ` Reserved: ${each.join("; ")}, so its requests below priority ${lowest}${share} wait for ${left}.`;
  const workers = serving.reserved_workers; // live answers only
  if (workers && workers.idle > 0) {
    // "their" read as the queriers just named as waited for: say whose.
    text += ` Now ${workers.idle} of the ${workers.connected} workers of its reserved queriers ${workers.idle === 1 ? "is" : "are"} idle.`;
  }
  return text;
}
