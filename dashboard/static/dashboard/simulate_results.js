// The Simulate page's results: both sides' tables side by side, the verdict
// lines with their summary, and two uPlot charts (bundled at setup from the
// npm registry). Imported by simulate.js; imports only what it draws with.

import { formatSeconds, iso } from "./format.js";
import { NONE, verdict } from "./simulate_verdict.js";
import uPlot from "./vendor/uplot.js";

const COLORS = { live: "#3867d6", proposed: "#d9822b" };
const charts = [];


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
    `reserved queriers idle ${formatSeconds(result.reserved_idle_seconds)}` +
    (result.reserved_queriers.length ? ` (${result.reserved_queriers.join(", ")})` : " (none reserved)") +
    `; last request done at ${instant(result.makespan_seconds)}.`;
  body.replaceChildren(
    table("Queue wait by priority", WAIT_HEAD, priorities.map((p) => waitRow(`priority ${p}`, result.by_priority[p]))),
    table("Queue wait by component", WAIT_HEAD, Object.entries(result.by_component).map(([c, s]) => waitRow(c, s))),
    table("Five worst tenants by p99", WAIT_HEAD, result.worst_tenants.map((s) => waitRow(s.tenant, s))),
    table("Worker utilisation by component", ["", "busy"], util.map(([c, u]) => [c, `${(u * 100).toFixed(1)}%`])),
    table("Rejected (429, rules, federation) by tenant", ["", "count"], rejected),
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
    return ` Proposed started from the live backlog (apply now): what the live config queued in the ${w.warmup_seconds} s before the window kept its priority; only requests arriving in the window got the proposal's.`;
  }
  return ` Each side started from its own backlog of the ${w.warmup_seconds} s before the window, as if the proposal had been applied long ago.`;
}

export function render(answer) {
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
    `${w.kind === "recent" ? `recent ${w.window_seconds} s` : w.name}: ${w.requests} requests, ` +
    `${w.queriers} queriers (${w.workers} workers), seed ${w.seed}.` + startedFrom(w) + whoseTraffic(w);
  column(document.getElementById("col-live"), answer.live);
  column(document.getElementById("col-proposed"), answer.proposed);
  drawCharts(answer);
}

function size(el) {
  return { width: Math.max(320, el.clientWidth), height: 220 };
}

const SIDES = ["live", "proposed"];
// A simulated instant as the server rounded it (to the millisecond), no
// more digits: the grid's whole seconds read "12 s", a run's end "61.734 s".
const instant = (t) => `${Number(t.toFixed(3))} s`;

// Each side's p99 by priority, highest priority first (null: no requests there).
function priorityBars(answer) {
  const levels = [...new Set(SIDES.flatMap((side) => Object.keys(answer[side].by_priority)))]
    .sort((a, b) => Number(b) - Number(a));
  const p99 = (side) => levels.map((p) => (answer[side].by_priority[p] ? answer[side].by_priority[p].p99 : null));
  return { levels, live: p99("live"), proposed: p99("proposed") };
}

// Both sides' queue-length samples on one time axis. The sides share a
// grid, but each run's last sample is at its own end, off it: put side by
// side by index, the shorter side's last point was drawn at the other's
// next grid instant. Null: no sample of that side at that instant.
function queueSeries(answer) {
  const at = new Map();
  SIDES.forEach((side, k) => {
    const { t, queue_length: length } = answer[side].series;
    t.forEach((when, i) => {
      if (!at.has(when)) at.set(when, [null, null]);
      at.get(when)[k] = length[i];
    });
  });
  const t = [...at.keys()].sort((a, b) => a - b);
  return { t, live: t.map((when) => at.get(when)[0]), proposed: t.map((when) => at.get(when)[1]) };
}

// Where a side's queue peaked first, and its last sample (indices into `t`), or null.
function landmarks(values) {
  let peak = -1;
  let last = -1;
  values.forEach((v, i) => {
    if (v === null) return;
    if (peak < 0 || v > values[peak]) peak = i;
    last = i;
  });
  return peak < 0 ? null : { peak, last };
}

function queueSentence(name, values, t) {
  const marks = landmarks(values);
  if (!marks) return `${name}: no samples.`;
  const end = `${values[marks.last]} queued at its last sample (${instant(t[marks.last])})`;
  if (!values[marks.peak]) return `${name}: nothing queued at any sample up to ${instant(t[marks.last])}.`;
  return `${name}: peak ${values[marks.peak]} queued at ${instant(t[marks.peak])}, ${end}.`;
}

// Rows the queue table shows: all of a short series; of a long one every
// stride-th instant, with each side's peak and last sample, so the table
// never misses what the sentence names.
const MOST_ROWS = 60;

function queueRows(series) {
  const n = series.t.length;
  const stride = n > MOST_ROWS ? Math.ceil(n / (MOST_ROWS - 10)) : 1;
  const marks = SIDES.map((side) => landmarks(series[side]));
  const kept = new Set(series.t.map((_, i) => i).filter((i) => i % stride === 0));
  for (const m of marks) if (m) kept.add(m.peak).add(m.last);
  const cell = (side, i) => {
    const v = series[side][i];
    if (v === null) return "–";
    return marks[SIDES.indexOf(side)].peak === i ? `${v} (peak)` : String(v);
  };
  const rows = [...kept].sort((a, b) => a - b).map((i) => [instant(series.t[i]), cell("live", i), cell("proposed", i)]);
  const which =
    stride > 1
      ? `one in every ${stride} of the chart's ${n} instants, with each side's peak and last sample`
      : `each of the chart's ${n} instants`;
  return { rows, which };
}

// The sentence under each chart and the table in its "as a table", from
// the very arrays the chart draws.
function describeCharts(bars, series) {
  const worst = (side) => {
    const at = bars[side].reduce((best, v, i) => (v !== null && (best < 0 || v > bars[side][best]) ? i : best), -1);
    return at < 0 ? `${side}: no requests` : `${side} ${formatSeconds(bars[side][at])} at priority ${bars.levels[at]}`;
  };
  document.getElementById("chart-priority-summary").textContent =
    `The highest p99 of each side: ${worst("live")}; ${worst("proposed")}.`;
  const p99 = (v) => (v === null ? NONE : formatSeconds(v));
  document.getElementById("chart-priority-data").replaceChildren(
    table(
      "p99 queue wait by priority, each side's bar",
      ["", "live p99", "proposed p99"],
      bars.levels.map((p, i) => [`priority ${p}`, p99(bars.live[i]), p99(bars.proposed[i])]),
    ),
  );
  document.getElementById("chart-queue-summary").textContent =
    `${queueSentence("Live", series.live, series.t)} ${queueSentence("Proposed", series.proposed, series.t)}`;
  const { rows, which } = queueRows(series);
  document.getElementById("chart-queue-data").replaceChildren(
    table(
      `Requests queued at ${which} (–: no sample of that side at that instant)`,
      ["simulated seconds", "live, queued", "proposed, queued"],
      rows,
    ),
  );
}

// Each chart's plot is kept on its box, as timeseries.js does: a script (or
// a test) can read the data drawn.
function plot(box, options, data) {
  const chart = new uPlot({ ...size(box), ...options }, data, box);
  box.plot = chart;
  charts.push(chart);
}

function drawCharts(answer) {
  while (charts.length) charts.pop().destroy();
  const bars = priorityBars(answer);
  const { levels } = bars;
  const series = queueSeries(answer);
  describeCharts(bars, series);
  const barPaths = uPlot.paths.bars;
  plot(
    document.getElementById("chart-priority"),
    {
      scales: { x: { time: false, range: [-0.5, levels.length - 0.5] } },
      axes: [
        { values: (u, splits) => splits.map((i) => (levels[i] !== undefined && Number.isInteger(i) ? `priority ${levels[i]}` : "")), splits: () => levels.map((_, i) => i) },
        { label: "seconds" },
      ],
      series: [
        {},
        { label: "live", fill: COLORS.live, stroke: COLORS.live, paths: barPaths({ size: [0.35, 60], align: -1 }), points: { show: false } },
        { label: "proposed", fill: COLORS.proposed, stroke: COLORS.proposed, paths: barPaths({ size: [0.35, 60], align: 1 }), points: { show: false } },
      ],
    },
    [levels.map((_, i) => i), bars.live, bars.proposed],
  );
  plot(
    document.getElementById("chart-queue"),
    {
      scales: { x: { time: false } },
      axes: [{ label: "simulated seconds" }, { label: "queued" }],
      // A side's line goes on across the other side's end instant, where only
      // that one has a sample; after its own run's end it has none.
      series: [
        {},
        { label: "live", stroke: COLORS.live, width: 1.5, spanGaps: true },
        { label: "proposed", stroke: COLORS.proposed, width: 1.5, spanGaps: true },
      ],
    },
    [series.t, series.live, series.proposed],
  );
}
