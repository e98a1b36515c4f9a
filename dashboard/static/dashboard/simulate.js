// The Simulate page: builds the POST /api/v1/simulate/ body from the form,
// shows progress while the server runs it (GET simulate/<run_id>/), cancels
// it (DELETE, and aborting the request), then draws both results side by
// side, the verdict lines and two uPlot charts. Everything it loads comes
// from this site's static files (uPlot is bundled at setup from the npm
// registry); nothing is fetched from elsewhere.

import { formatSeconds } from "./format.js";
import uPlot from "./vendor/uplot.js";

const form = document.getElementById("sim-form");
const runButton = document.getElementById("sim-run");
const cancelButton = document.getElementById("sim-cancel");
const progress = document.getElementById("sim-progress");
const statusLine = document.getElementById("sim-status");
const errorList = document.getElementById("sim-errors");
const proposedBox = document.getElementById("sim-proposed");
const proposedError = document.getElementById("proposed-error");
const workloadSelect = document.getElementById("sim-workload");
const quickLayout = document.getElementById("quick-layout");
const quickSelection = document.getElementById("quick-selection");
const results = document.getElementById("sim-results");
const csrf = form.querySelector("[name=csrfmiddlewaretoken]").value;
const liveConfig = JSON.parse(document.getElementById("sim-live").textContent);
const COLORS = { live: "#3867d6", proposed: "#d9822b" };

let current = null; // { runId, controller, timer }
const charts = [];

proposedBox.value = JSON.stringify(
  JSON.parse(document.getElementById("sim-proposal").textContent),
  null,
  2,
);
document.getElementById("live-config").textContent = JSON.stringify(liveConfig, null, 2);

function readProposed() {
  const text = proposedBox.value.trim();
  if (!text) return { settings: {}, tenants: {} };
  return JSON.parse(text);
}

function syncQuickPickers() {
  try {
    const settings = readProposed().settings || {};
    quickLayout.value = settings.layout || "";
    quickSelection.value = settings.component_selection || "";
  } catch (_) {
    /* the JSON is being edited; the pickers catch up when it parses */
  }
}

function setQuick(key, value) {
  let proposed;
  try {
    proposed = readProposed();
  } catch (error) {
    showProposedError(`Fix the JSON first: ${error.message}`);
    return;
  }
  proposed.settings = proposed.settings || {};
  if (value) proposed.settings[key] = value;
  else delete proposed.settings[key];
  proposedBox.value = JSON.stringify(proposed, null, 2);
}

function showProposedError(message) {
  proposedError.textContent = message;
  proposedError.hidden = !message;
}

function onWorkload() {
  const value = workloadSelect.value;
  for (const help of form.querySelectorAll("[data-for]")) {
    const key = help.dataset.for;
    help.hidden = !(key === value || (key === "recent" && value.startsWith("recent:")));
  }
  document.getElementById("slow-share-field").hidden = value !== "scenario:mimir-slow-consumer";
  const live = document.getElementById("live-help");
  live.textContent = value.startsWith("recent:")
    ? "The saved config, as the scheduler runs it now."
    : "The scenario's own documented config (shown in full after a run).";
}

function number(name) {
  const input = form.elements[name];
  if (!input || input.closest("[hidden]") || input.value.trim() === "") return null;
  return Number(input.value);
}

function buildBody() {
  const [kind, arg] = workloadSelect.value.split(":");
  const workload =
    kind === "recent" ? { kind, window_seconds: Number(arg) } : { kind: "scenario", name: arg };
  const knobs = {};
  const arrival = number("arrival_factor");
  if (arrival !== null) knobs.arrival_factor = arrival;
  const queriers = number("queriers");
  knobs.queriers = queriers;
  const duration = number("duration_seconds");
  if (duration !== null) knobs.duration_seconds = duration;
  const slowShare = number("slow_share");
  if (slowShare !== null) knobs.slow_share = slowShare;
  const factors = {};
  for (const input of form.querySelectorAll(".service-factor")) {
    const value = Number(input.value);
    if (input.value.trim() !== "" && value !== 1) factors[input.dataset.component] = value;
  }
  knobs.service_factor = factors;
  const seed = number("seed");
  return {
    workload,
    proposed: readProposed(),
    knobs,
    seed: seed === null ? 1 : seed,
    run_id: crypto.randomUUID().replaceAll("-", ""),
  };
}

// DRF's nested errors -> "path: message" lines.
function flatten(errors, prefix = "") {
  if (Array.isArray(errors)) {
    if (errors.every((e) => typeof e === "string")) {
      return errors.map((message) => `${prefix || "request"}: ${message}`);
    }
    return errors.flatMap((e, i) => flatten(e, `${prefix}[${i}]`));
  }
  if (errors && typeof errors === "object") {
    return Object.entries(errors).flatMap(([key, value]) => {
      const path = key === "non_field_errors" ? prefix : prefix ? `${prefix}.${key}` : key;
      return flatten(value, path);
    });
  }
  return [`${prefix}: ${errors}`];
}

function showErrors(lines) {
  errorList.replaceChildren(
    ...lines.map((line) => {
      const li = document.createElement("li");
      li.textContent = line;
      return li;
    }),
  );
  errorList.hidden = !lines.length;
}

function running(on) {
  runButton.disabled = on;
  cancelButton.disabled = !on;
  progress.hidden = !on;
  if (on) progress.value = 0;
}

async function pollProgress(runId) {
  try {
    const response = await fetch(`${form.dataset.url}${runId}/`, { credentials: "same-origin" });
    const state = response.ok ? await response.json() : null;
    // A poll answered after its run ended must not write over "Done" or "Cancelled".
    if (state && current && current.runId === runId) {
      progress.value = state.progress;
      statusLine.textContent = `Simulating… ${Math.round(state.progress * 100)}% (${state.elapsed_seconds.toFixed(1)} s of at most ${state.time_limit_seconds} s)`;
    }
  } catch (_) {
    /* a missed poll changes nothing: the next one catches up */
  }
}

async function run(event) {
  event.preventDefault();
  showErrors([]);
  showProposedError("");
  let body;
  try {
    body = buildBody();
  } catch (error) {
    showProposedError(`The proposed changes are not valid JSON: ${error.message}`);
    return;
  }
  const controller = new AbortController();
  current = { runId: body.run_id, controller, timer: null };
  running(true);
  statusLine.textContent = "Simulating…";
  current.timer = setInterval(() => pollProgress(body.run_id), 500);
  try {
    const response = await fetch(form.dataset.url, {
      method: "POST",
      body: JSON.stringify(body),
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      credentials: "same-origin",
      signal: controller.signal,
    });
    const answer = await response.json().catch(() => ({}));
    if (response.ok) {
      statusLine.textContent = `Done in ${answer.workload.elapsed_seconds} s.`;
      // A page that cannot show the answer says so, not that the server was away.
      try {
        render(answer);
      } catch (error) {
        results.hidden = true;
        statusLine.textContent = `The answer arrived but could not be shown (${error.message}); reload the page.`;
      }
    } else if (response.status === 400) {
      statusLine.textContent = "Nothing was simulated: fix the fields below.";
      showErrors(flatten(answer));
    } else if (answer.code === "cancelled") {
      statusLine.textContent = "Cancelled.";
    } else {
      statusLine.textContent = answer.detail || `The simulation failed (${response.status}).`;
    }
  } catch (error) {
    statusLine.textContent =
      error.name === "AbortError" ? "Cancelled." : "The server could not be reached.";
  } finally {
    clearInterval(current.timer);
    current = null;
    running(false);
  }
}

async function cancel() {
  if (!current) return;
  const { runId, controller } = current;
  statusLine.textContent = "Cancelling…";
  try {
    await fetch(`${form.dataset.url}${runId}/`, {
      method: "DELETE",
      headers: { "X-CSRFToken": csrf },
      credentials: "same-origin",
    });
  } finally {
    controller.abort();
  }
}

// -- results -------------------------------------------------------------------

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
    `${result.rejected.by_rule} by a rejection rule; ` +
    `reserved queriers idle ${seconds(result.reserved_idle_seconds)} s` +
    (result.reserved_queriers.length ? ` (${result.reserved_queriers.join(", ")})` : " (none reserved)") +
    `; last request done at ${seconds(result.makespan_seconds)} s.`;
  body.replaceChildren(
    table("Queue wait by priority", WAIT_HEAD, priorities.map((p) => waitRow(`priority ${p}`, result.by_priority[p]))),
    table("Queue wait by component", WAIT_HEAD, Object.entries(result.by_component).map(([c, s]) => waitRow(c, s))),
    table("Five worst tenants by p99", WAIT_HEAD, result.worst_tenants.map((s) => waitRow(s.tenant, s))),
    table("Worker utilisation by component", ["", "busy"], util.map(([c, u]) => [c, `${(u * 100).toFixed(1)}%`])),
    table("Rejected (429 and rules) by tenant", ["", "count"], rejected),
    facts,
  );
}

// How a verdict line spells a side with no requests at its priority (scheduler_core.whatif).
const NONE = "no requests";

function render(answer) {
  results.hidden = false;
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

form.addEventListener("submit", run);
cancelButton.addEventListener("click", cancel);
workloadSelect.addEventListener("change", onWorkload);
quickLayout.addEventListener("change", () => setQuick("layout", quickLayout.value));
quickSelection.addEventListener("change", () => setQuick("component_selection", quickSelection.value));
proposedBox.addEventListener("input", syncQuickPickers);
onWorkload();
syncQuickPickers();
