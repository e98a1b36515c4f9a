// The Simulate page's results: both sides' tables side by side, the verdict
// lines with their summary, the workload line, and the two charts
// (simulate_charts.js). Imported by simulate.js. Durations read as on the
// inspector (format.js): waits about three digits ("12.3ms", "1.23s"),
// simulated instants as the server rounded them ("9m55s859ms").

import { formatTiming, formatWait, iso } from "./format.js";
import { drawCharts } from "./simulate_charts.js";
import { instant, windowEnd } from "./simulate_time.js";
import { verdict } from "./simulate_verdict.js";

function table(caption, head, rows) {
  const t = document.createElement("table");
  t.className = "compact";
  const cap = t.createCaption();
  cap.textContent = caption;
  const tr = t.createTHead().insertRow();
  for (const h of head) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = h;
    tr.append(th);
  }
  const tbody = t.createTBody();
  // Each row's first cell heads it: a screen reader names a number by its
  // row ("priority 5") and its column ("p99").
  for (const row of rows) {
    const r = tbody.insertRow();
    row.forEach((cell, i) => {
      const td = document.createElement(i ? "td" : "th");
      td.textContent = cell;
      if (i) td.className = "num";
      else td.scope = "row";
      r.append(td);
    });
  }
  if (!rows.length) {
    const none = tbody.insertRow().insertCell();
    none.colSpan = head.length;
    none.textContent = "none";
  }
  return t;
}

// Waits span microseconds to minutes: each with its unit, as on the inspector.
const waitRow = (label, s) => [label, ...[s.mean, s.p50, s.p99, s.max].map(formatTiming), s.count];
// The first column is named too: a header cell without text tells a screen reader nothing.
const waitHead = (rowsAre) => [rowsAre, "mean", "p50", "p99", "max", "count"];

// The requests' line, each count at its own instant. For recent traffic the
// still-queued count is the window's end's, while the completed count runs
// on through the drain after it (the run serves what was left queued):
// without their instants, "87 still queued" read against "all completed".
function requestsLine(result, end) {
  const { offered, completed, left_queued: left } = result.requests;
  const refused =
    `${result.rejected.too_many_outstanding} rejected over the outstanding limit (429), ` +
    `${result.rejected.by_rule} by a rejection rule` +
    (result.rejected.too_many_tenants ? `, ${result.rejected.too_many_tenants} naming too many federated tenants` : "");
  const done = result.makespan_seconds;
  const never = left ? `; ${left} never served` : "";
  if (end === null) return `${offered} offered, ${refused}. ${completed} completed, the last at ${instant(done)}${never}.`;
  const waiting = `At the window's end (${instant(end)}): ${result.waiting_at_window_end.total} still queued.`;
  const by =
    done > end
      ? `By the end of the drain, ${formatTiming(done - end)} after the window (the last request done at ${instant(done)})`
      : `By the window's end (the last request done at ${instant(done)})`;
  return `${offered} offered, ${refused}. ${waiting} ${by}: ${completed} completed${never}.`;
}

function column(element, result, end) {
  const body = element.querySelector(".result-body");
  const priorities = Object.keys(result.by_priority).sort((a, b) => Number(b) - Number(a));
  const util = Object.entries(result.utilisation);
  const rejected = Object.entries(result.rejected.by_tenant);
  const facts = document.createElement("p");
  facts.className = "help";
  facts.textContent =
    `${requestsLine(result, end)} Reserved queriers idle ${formatTiming(result.reserved_idle_seconds)}` +
    (result.reserved_queriers.length ? ` (${result.reserved_queriers.join(", ")}).` : " (none reserved).");
  body.replaceChildren(
    table("Queue wait by priority", waitHead("priority"), priorities.map((p) => waitRow(`priority ${p}`, result.by_priority[p]))),
    table("Queue wait by component", waitHead("component"), Object.entries(result.by_component).map(([c, s]) => waitRow(c, s))),
    table("Five worst tenants by p99", waitHead("tenant"), result.worst_tenants.map((s) => waitRow(s.tenant, s))),
    table("Worker utilisation by component", ["component", "busy"], util.map(([c, u]) => [c, `${(u * 100).toFixed(1)}%`])),
    table("Rejected (429, rules, federation) by tenant", ["tenant", "count"], rejected),
    facts,
  );
}

function item(text, className = "") {
  const li = document.createElement("li");
  li.textContent = text;
  if (className) li.className = className;
  return li;
}

// Recent traffic is the answering replica's alone: on a scaled-out service
// the line names it and the replicas whose traffic is not in the run, so a
// part is not read as the service's. A lone replica's (no other_replicas,
// or a server of an earlier release) is all of it: nothing is added.
function whoseTraffic(w) {
  const others = w.other_replicas ?? [];
  if (!others.length) return "";
  const plural = others.length > 1 ? "s" : "";
  return ` Replica ${iso(w.replica)}'s traffic only: the traffic replica${plural} ${others.map(iso).join(", ")} received is not in it.`;
}

// Which backlog the proposed side's window started with (`knobs.start_from`,
// echoed for recent traffic); a scenario's queue starts empty, said nothing.
function startedFrom(w) {
  if (w.kind !== "recent" || !w.start_from) return "";
  if (!w.warmup_seconds) return " No time before the window was recorded: both sides started from an empty queue.";
  if (w.start_from === "live") {
    return ` Proposed started from the live backlog (apply now): what the live config queued in the ${formatWait(w.warmup_seconds)} before the window kept its priority; only requests arriving in the window got the proposal's.`;
  }
  return ` Each side started from its own backlog of the ${formatWait(w.warmup_seconds)} before the window, as if the proposal had been applied long ago.`;
}

// What was replayed: for recent traffic the window's span as run. A window
// starts at a whole minute, so it spans up to a minute more than asked (or
// an hour less a minute, the warm-up's, when asked for the whole hour);
// one reaching back past the minute this replica began recording starts
// there instead, shorter. Said beside the window asked for (`asked`).
function replayed(w, asked) {
  if (w.kind !== "recent") return w.name;
  const span = w.window_seconds;
  const why =
    asked && !w.warmup_seconds && span < asked - 60
      ? "recorded only since the minute it starts at"
      : "windows start at a whole minute";
  let text = `recent ${formatWait(span)} (${asked ? `asked ${formatWait(asked)}; ` : ""}${why})`;
  const duration = w.duration_seconds;
  if (typeof duration === "number" && duration !== span) {
    text += `, replayed for ${formatWait(duration)} (${duration < span ? "its end" : "repeated"})`;
  }
  return text;
}

// `asked`: the window_seconds the page asked for (null: a scenario).
export function render(answer, asked = null) {
  document.getElementById("sim-results").hidden = false;
  const { lines, summary, tenants } = verdict(answer);
  // A line whose two sides read the same is kept (every priority is listed)
  // but set apart, so the lines that changed are the ones that stand out.
  document.getElementById("sim-verdict-summary").textContent = summary;
  document.getElementById("sim-verdicts").replaceChildren(...lines.map((l) => item(l.text, l.same ? "unchanged" : "")));
  document.getElementById("sim-tenant-verdicts").replaceChildren(...tenants.map((text) => item(text)));
  document.getElementById("sim-tenants").hidden = !tenants.length;
  const w = answer.workload;
  document.getElementById("sim-workload-line").textContent =
    `${replayed(w, asked)}: ${w.requests} requests, ` +
    `${w.queriers} queriers (${w.workers} workers), seed ${w.seed}.` + startedFrom(w) + whoseTraffic(w);
  const end = windowEnd(answer);
  column(document.getElementById("col-live"), answer.live, end);
  column(document.getElementById("col-proposed"), answer.proposed, end);
  drawCharts(answer, end, table);
}
