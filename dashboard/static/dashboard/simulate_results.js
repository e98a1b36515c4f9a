// The Simulate page's results: both sides' tables side by side, the verdict
// lines with their summary, and two uPlot charts (bundled at setup from the
// npm registry). Imported by simulate.js; imports only what it draws with.

import { formatSeconds } from "./format.js";
import uPlot from "./vendor/uplot.js";

const COLORS = { live: "#3867d6", proposed: "#d9822b" };
const charts = [];

const seconds = (v) => (v >= 10 ? v.toFixed(0) : v >= 0.1 ? v.toFixed(2) : v.toFixed(4));

function table(caption, head, rows) {
  const t = document.createElement("table");
  t.className = "compact";
  const cap = t.createCaption();
  cap.textContent = caption;
  const tr = t.createTHead().insertRow();
  for (const h of head) {
    const th = document.createElement("th");
    th.textContent = h;
    tr.append(th);
  }
  const tbody = t.createTBody();
  for (const row of rows) {
    const r = tbody.insertRow();
    row.forEach((cell, i) => {
      const td = r.insertCell();
      td.textContent = cell;
      if (i) td.className = "num";
    });
  }
  if (!rows.length) tbody.insertRow().insertCell().textContent = "none";
  return t;
}

// Waits span microseconds to minutes: each with its unit, as on the inspector.
const waitRow = (label, s) => [label, ...[s.mean, s.p50, s.p99, s.max].map(formatSeconds), s.count];
const WAIT_HEAD = ["", "mean", "p50", "p99", "max", "count"];

function column(element, result) {
  const body = element.querySelector(".result-body");
  const priorities = Object.keys(result.by_priority).sort((a, b) => Number(b) - Number(a));
  const util = Object.entries(result.utilisation);
  const rejected = Object.entries(result.rejected.by_tenant);
  const facts = document.createElement("p");
  facts.className = "help";
  facts.textContent =
    `${result.requests.offered} offered, ${result.requests.completed} completed, ` +
    `${result.rejected.too_many_outstanding} rejected over the outstanding limit (429), ` +
    `${result.rejected.by_rule} by a rejection rule` +
    (result.rejected.too_many_tenants ? `, ${result.rejected.too_many_tenants} naming too many federated tenants` : "") +
    "; " +
    `reserved queriers idle ${seconds(result.reserved_idle_seconds)} s` +
    (result.reserved_queriers.length ? ` (${result.reserved_queriers.join(", ")})` : " (none reserved)") +
    `; last request done at ${seconds(result.makespan_seconds)} s.`;
  body.replaceChildren(
    table("Queue wait by priority", WAIT_HEAD, priorities.map((p) => waitRow(`priority ${p}`, result.by_priority[p]))),
    table("Queue wait by component", WAIT_HEAD, Object.entries(result.by_component).map(([c, s]) => waitRow(c, s))),
    table("Five worst tenants by p99", WAIT_HEAD, result.worst_tenants.map((s) => waitRow(s.tenant, s))),
    table("Worker utilisation by component", ["", "busy"], util.map(([c, u]) => [c, `${(u * 100).toFixed(1)}%`])),
    table("Rejected (429, rules, federation) by tenant", ["", "count"], rejected),
    facts,
  );
}

// How a verdict line spells a side with no requests at its priority (scheduler_core.whatif).
const NONE = "no requests";

export function render(answer) {
  document.getElementById("sim-results").hidden = false;
  // A line whose two sides read the same is kept (every priority is listed)
  // but set apart, so the lines that changed are the ones that stand out.
  // A priority only one side uses is a move of requests, not a change of wait.
  const sides = answer.verdicts.map((line) => {
    const [before, after] = line.slice(line.indexOf(": ") + 2).split(" -> ");
    const level = line.slice("p99 for priority ".length, line.indexOf(": "));
    return { before, after, level };
  });
  const lines = answer.verdicts.map((line, i) => {
    const li = document.createElement("li");
    const same = sides[i].before === sides[i].after;
    li.textContent = same ? `${line} (unchanged)` : line;
    if (same) li.className = "unchanged";
    return li;
  });
  const both = sides.filter((s) => s.before !== NONE && s.after !== NONE);
  const changed = both.filter((s) => s.before !== s.after).length;
  const onlyLive = sides.filter((s) => s.after === NONE).map((s) => s.level);
  const onlyProposed = sides.filter((s) => s.before === NONE).map((s) => s.level);
  let summary = changed
    ? `${changed} of ${both.length} priorities' p99 change.`
    : "The proposed config leaves every priority's p99 as it is on this workload.";
  if (changed === 0 && (onlyLive.length || onlyProposed.length)) {
    summary = `No priority both configs use changes its p99 (${both.length} of them).`;
  }
  if (onlyLive.length) summary += ` Only the live config has requests at priority ${onlyLive.join(", ")}.`;
  if (onlyProposed.length) summary += ` Only the proposed one has requests at priority ${onlyProposed.join(", ")}.`;
  // Refused requests have no wait, so the priority lines cannot show them:
  // a change that ends (or causes) 429s must say so where the verdict is read.
  const refused = [answer.live.rejected.total, answer.proposed.rejected.total];
  if (refused[0] !== refused[1]) summary += ` Requests rejected (429 and rules): ${refused[0]} -> ${refused[1]}.`;
  document.getElementById("sim-verdict-summary").textContent = summary;
  document.getElementById("sim-verdicts").replaceChildren(...lines);
  const w = answer.workload;
  document.getElementById("sim-workload-line").textContent =
    `${w.kind === "recent" ? `recent ${w.window_seconds} s` : w.name}: ${w.requests} requests, ` +
    `${w.queriers} queriers (${w.workers} workers), seed ${w.seed}.`;
  if (w.config) document.getElementById("live-config").textContent = JSON.stringify(w.config, null, 2);
  column(document.getElementById("col-live"), answer.live);
  column(document.getElementById("col-proposed"), answer.proposed);
  drawCharts(answer);
}

function size(el) {
  return { width: Math.max(320, el.clientWidth), height: 220 };
}

function drawCharts(answer) {
  while (charts.length) charts.pop().destroy();
  const levels = [...new Set([...Object.keys(answer.live.by_priority), ...Object.keys(answer.proposed.by_priority)])]
    .sort((a, b) => Number(b) - Number(a));
  const p99 = (side) => levels.map((p) => (answer[side].by_priority[p] ? answer[side].by_priority[p].p99 : null));
  const bars = uPlot.paths.bars;
  const byPriority = document.getElementById("chart-priority");
  charts.push(
    new uPlot(
      {
        ...size(byPriority),
        scales: { x: { time: false, range: [-0.5, levels.length - 0.5] } },
        axes: [
          { values: (u, splits) => splits.map((i) => (levels[i] !== undefined && Number.isInteger(i) ? `priority ${levels[i]}` : "")), splits: () => levels.map((_, i) => i) },
          { label: "seconds" },
        ],
        series: [
          {},
          { label: "live", fill: COLORS.live, stroke: COLORS.live, paths: bars({ size: [0.35, 60], align: -1 }), points: { show: false } },
          { label: "proposed", fill: COLORS.proposed, stroke: COLORS.proposed, paths: bars({ size: [0.35, 60], align: 1 }), points: { show: false } },
        ],
      },
      [levels.map((_, i) => i), p99("live"), p99("proposed")],
      byPriority,
    ),
  );
  const live = answer.live.series;
  const proposed = answer.proposed.series;
  const xs = live.t.length >= proposed.t.length ? live.t : proposed.t;
  const pad = (values) => xs.map((_, i) => (i < values.length ? values[i] : null));
  const queue = document.getElementById("chart-queue");
  charts.push(
    new uPlot(
      {
        ...size(queue),
        scales: { x: { time: false } },
        axes: [{ label: "simulated seconds" }, { label: "queued" }],
        series: [
          {},
          { label: "live", stroke: COLORS.live, width: 1.5 },
          { label: "proposed", stroke: COLORS.proposed, width: 1.5 },
        ],
      },
      [xs, pad(live.queue_length), pad(proposed.queue_length)],
      queue,
    ),
  );
}
