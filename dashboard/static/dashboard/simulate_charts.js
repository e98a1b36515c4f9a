// The Simulate page's two uPlot charts (bundled at setup from the npm
// registry), each with its words: a sentence under it and, to open, a table
// of the points it draws, written from the very arrays the chart draws.
// For recent traffic the queue chart marks the window's end: the verdict's
// "still queued" counts are at that instant, and the runs go on past it
// until their queues drained.

import { formatTiming } from "./format.js";
import { instant } from "./simulate_time.js";
import { NONE } from "./simulate_verdict.js";
import uPlot from "./vendor/uplot.js";

const COLORS = { live: "#3867d6", proposed: "#d9822b", end: "#555b66" };
const SIDES = ["live", "proposed"];
const charts = [];

function size(el) {
  return { width: Math.max(320, el.clientWidth), height: 220 };
}

// Each side's p99 by priority, highest priority first (null: no requests there).
function priorityBars(answer) {
  const levels = [...new Set(SIDES.flatMap((side) => Object.keys(answer[side].by_priority)))]
    .sort((a, b) => Number(b) - Number(a));
  const p99 = (side) => levels.map((p) => (answer[side].by_priority[p] ? answer[side].by_priority[p].p99 : null));
  return { levels, live: p99("live"), proposed: p99("proposed") };
}

// Both sides' queue-length samples on one time axis, over the same span.
// The sides share a grid, but each run's last sample is at its own end
// (its last request done), off it. Past its end a run has no events, so
// its queue stays as that last sample left it: drawn on, flat, to the
// other side's end, both lines cover the same span and neither reads as
// stopping first. `ends`: each side's last sample (an index into `t`).
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
  const series = { t, ends: {} };
  SIDES.forEach((side, k) => {
    const values = t.map((when) => at.get(when)[k]);
    let end = values.length - 1;
    while (end >= 0 && values[end] === null) end -= 1;
    // Within a run an instant only the other side sampled stays null (the
    // line is drawn across it); after the run's end the queue is as it left it.
    series[side] = values.map((v, i) => (i > end ? values[end] : v));
    series.ends[side] = end;
  });
  return series;
}

// The index of a side's first highest sample up to its end, or -1.
function peakOf(values, end) {
  let peak = -1;
  for (let i = 0; i <= end; i += 1) if (values[i] !== null && (peak < 0 || values[i] > values[peak])) peak = i;
  return peak;
}

function queueSentence(name, result, values, series, end) {
  const last = series.ends[name.toLowerCase()];
  if (last < 0) return `${name}: no samples.`;
  const peak = peakOf(values, last);
  const parts = [
    values[peak] ? `peak ${values[peak]} queued at ${instant(series.t[peak])}` : "nothing queued at any sample",
  ];
  if (end !== null) {
    parts.push(`${result.waiting_at_window_end.total} queued at the window's end (${instant(end)})`);
  }
  // The run's end and what it left queued are the result's own, as the
  // columns say them: not read off the samples, which only chart them.
  const left = result.requests.left_queued;
  parts.push(`the last request done at ${instant(result.makespan_seconds)}, ${left ? `${left} never served` : "nothing left queued"}`);
  return `${name}: ${parts.join("; ")}.`;
}

// Rows the queue table shows: all of a short series; of a long one every
// stride-th instant, with each side's peak and end and the window's end,
// so the table never misses what the sentences name.
const MOST_ROWS = 60;

function queueRows(series, end) {
  const n = series.t.length;
  const stride = n > MOST_ROWS ? Math.ceil(n / (MOST_ROWS - 10)) : 1;
  const kept = new Set(series.t.map((_, i) => i).filter((i) => i % stride === 0));
  const peaks = {};
  for (const side of SIDES) {
    peaks[side] = peakOf(series[side], series.ends[side]);
    for (const i of [peaks[side], series.ends[side]]) if (i >= 0) kept.add(i);
  }
  const atEnd = end === null ? -1 : series.t.indexOf(end);
  if (atEnd >= 0) kept.add(atEnd);
  const cell = (side, i) => {
    const v = series[side][i];
    if (v === null) return "–";
    const notes = [];
    if (peaks[side] === i && v) notes.push("peak");
    if (series.ends[side] === i) notes.push("last request done");
    return notes.length ? `${v} (${notes.join(", ")})` : String(v);
  };
  const rows = [...kept]
    .sort((a, b) => a - b)
    .map((i) => [instant(series.t[i]) + (i === atEnd ? " (window's end)" : ""), cell("live", i), cell("proposed", i)]);
  const which =
    stride > 1
      ? `one in every ${stride} of the chart's ${n} instants, with each side's peak and last request done`
      : `each of the chart's ${n} instants`;
  return { rows, which };
}

function describeCharts(answer, bars, series, end, table) {
  const worst = (side) => {
    const at = bars[side].reduce((best, v, i) => (v !== null && (best < 0 || v > bars[side][best]) ? i : best), -1);
    return at < 0 ? `${side}: no requests` : `${side} ${formatTiming(bars[side][at])} at priority ${bars.levels[at]}`;
  };
  document.getElementById("chart-priority-summary").textContent =
    `The highest p99 of each side: ${worst("live")}; ${worst("proposed")}.`;
  const p99 = (v) => (v === null ? NONE : formatTiming(v));
  document.getElementById("chart-priority-data").replaceChildren(
    table(
      "p99 queue wait by priority, each side's bar",
      ["", "live p99", "proposed p99"],
      bars.levels.map((p, i) => [`priority ${p}`, p99(bars.live[i]), p99(bars.proposed[i])]),
    ),
  );
  const sentences = [queueSentence("Live", answer.live, series.live, series, end), queueSentence("Proposed", answer.proposed, series.proposed, series, end)];
  if (end !== null) sentences.push("The dashed line is the window's end; after it the runs only drain their queues.");
  document.getElementById("chart-queue-summary").textContent = sentences.join(" ");
  const { rows, which } = queueRows(series, end);
  const after = "after its last request done, a side's queue stays as it was left";
  document.getElementById("chart-queue-data").replaceChildren(
    table(`Requests queued at ${which} (${after}; –: no sample of that side at that instant)`, ["simulated time", "live, queued", "proposed, queued"], rows),
  );
}

// The window's end, a dashed vertical line labelled as the sentence names it.
function drawWindowEnd(u, end) {
  const { ctx } = u;
  const { left, top, width, height } = u.bbox;
  const x = Math.round(u.valToPos(end, "x", true));
  if (x < left || x > left + width) return;
  ctx.save();
  ctx.strokeStyle = COLORS.end;
  ctx.fillStyle = COLORS.end;
  ctx.lineWidth = Math.max(1, devicePixelRatio);
  ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
  ctx.font = `${11 * devicePixelRatio}px sans-serif`;
  ctx.textAlign = "right";
  ctx.textBaseline = "top";
  ctx.beginPath();
  ctx.moveTo(x, top);
  ctx.lineTo(x, top + height);
  ctx.stroke();
  ctx.fillText("window's end", x - 3 * devicePixelRatio, top + 2 * devicePixelRatio);
  ctx.restore();
}

// Each chart's plot is kept on its box, as timeseries.js does: a script (or
// a test) can read the data drawn.
function plot(box, options, data) {
  const chart = new uPlot({ ...size(box), ...options }, data, box);
  box.plot = chart;
  charts.push(chart);
}

// `table(caption, head, rows)` builds the tables, as the result columns'.
export function drawCharts(answer, end, table) {
  while (charts.length) charts.pop().destroy();
  const bars = priorityBars(answer);
  const { levels } = bars;
  const series = queueSeries(answer);
  describeCharts(answer, bars, series, end, table);
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
  const box = document.getElementById("chart-queue");
  plot(
    box,
    {
      scales: { x: { time: false } },
      axes: [{ label: "simulated seconds" }, { label: "queued" }],
      series: [
        {},
        { label: "live", stroke: COLORS.live, width: 1.5, spanGaps: true },
        { label: "proposed", stroke: COLORS.proposed, width: 1.5, spanGaps: true },
      ],
      hooks: { draw: end === null ? [] : [(u) => drawWindowEnd(u, end)] },
    },
    [series.t, series.live, series.proposed],
  );
  box.windowEnd = end;
}
