// The Simulate page: builds the POST /api/v1/simulate/ body from the form,
// shows progress while the server runs it (GET simulate/<run_id>/), cancels
// it (DELETE, and aborting the request), then has simulate_results.js draw
// both results side by side. Everything it loads comes from this site's
// static files; nothing is fetched from elsewhere.

import { focusLost } from "./dom.js";
import { formatTiming, formatWait } from "./format.js";
import { render } from "./simulate_results.js";
import { startFromFor } from "./simulate_start_from.js";

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
const csrf = form.querySelector("[name=csrfmiddlewaretoken]").value;
const liveConfig = JSON.parse(document.getElementById("sim-live").textContent);

let current = null; // { runId, controller, timer }
// The config each scenario's run answered with, by workload value: the Live
// box shows the one of the workload picked, never another's.
const scenarioConfigs = new Map();

proposedBox.value = JSON.stringify(
  JSON.parse(document.getElementById("sim-proposal").textContent),
  null,
  2,
);

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

// A knob's "(blank: …)": what an empty box means for the workload picked,
// the template's words for recent traffic, else `text` (a scenario's own).
function blankMeans(id, text) {
  const hint = document.querySelector(`label[for="${id}"] .blank-means`);
  hint.dataset.recent ||= hint.textContent;
  hint.textContent = text ?? hint.dataset.recent;
}

function onWorkload() {
  const value = workloadSelect.value;
  for (const help of form.querySelectorAll("[data-for]")) {
    const key = help.dataset.for;
    help.hidden = !(key === value || (key === "recent" && value.startsWith("recent:")));
  }
  document.getElementById("slow-share-field").hidden = value !== "scenario:mimir-slow-consumer";
  // A scenario's blank boxes mean its own duration and queriers, not the
  // window's or those connected; one with no duration (everything arrives
  // at once) has no Duration box, as the API refuses one for it.
  const own = value.startsWith("recent:") ? null : workloadSelect.selectedOptions[0].dataset;
  document.getElementById("duration-field").hidden = own !== null && own.duration === undefined;
  blankMeans("knob-duration", own?.duration && `(blank: the scenario's ${own.duration})`);
  blankMeans("knob-queriers", own && `(blank: the scenario's ${own.queriers})`);
  // Only recent traffic has a warm-up queued under the live config to start from.
  document.getElementById("start-from-field").hidden = !value.startsWith("recent:");
  startFromFor(workloadSelect.selectedOptions[0]);
  const live = document.getElementById("live-help");
  // The template's line says the box holds only the saved blocks of the
  // tenants the proposal changes: without it, a live side reading
  // "tenants": {} looked like a scheduler with no tenants configured.
  live.dataset.recent ||= live.textContent;
  live.textContent = value.startsWith("recent:")
    ? live.dataset.recent
    : "The scenario's own documented config (shown in full after a run).";
  showLiveConfig();
}

// The Live box: for recent traffic the saved config the page came with (a
// recent run's answer has only its settings); for a scenario the config its
// last run answered with, else nothing yet. A scenario's config once stayed
// in the box, under the saved config's words, after switching back to recent.
function showLiveConfig() {
  const value = workloadSelect.value;
  const config = value.startsWith("recent:") ? liveConfig : scenarioConfigs.get(value);
  document.getElementById("live-config").textContent = config ? JSON.stringify(config, null, 2) : "";
}

// A number box holding text the browser cannot read ("-", "1e") reports an
// empty value, which these knobs take as "as connected" or the default: a run
// the operator did not ask for. Such boxes are refused at their field instead.
class UnreadableNumbers extends Error {
  constructor(inputs) {
    super("unreadable numbers");
    this.inputs = inputs;
  }
}

// The box's label without its "(blank: …)" hint; a service factor's is its component's.
function labelOf(input) {
  const label = input.labels[0].textContent.replace(/\s*\(.*\)\s*$/, "").trim();
  return input.dataset.component ? `Service time × ${label}` : label;
}

function checkNumbers() {
  const boxes = Array.from(form.querySelectorAll('input[type="number"]'));
  for (const input of boxes) input.removeAttribute("aria-invalid");
  const bad = boxes.filter((input) => !input.closest("[hidden]") && input.validity.badInput);
  for (const input of bad) input.setAttribute("aria-invalid", "true");
  if (bad.length) throw new UnreadableNumbers(bad);
}

function number(name) {
  const input = form.elements[name];
  if (!input || input.closest("[hidden]") || input.value.trim() === "") return null;
  return Number(input.value);
}

// The seed box's whole number as its digits ("007" as "7"), else its Number
// (1.5, -1: the server refuses them at the box), or null when blank.
function seed() {
  const text = form.elements.seed.value.trim();
  if (text === "") return null;
  return /^\d+$/.test(text) ? BigInt(text).toString() : Number(text);
}

// The body's JSON with a whole-number seed written as its digits: as a
// Number, one past 2**53 would be rounded, and a 24-digit one went as
// 1e+23, which the server could only refuse as no integer at all.
function bodyText({ seed: digits, ...rest }) {
  const value = typeof digits === "string" ? digits : JSON.stringify(digits);
  return `{"seed":${value},${JSON.stringify(rest).slice(1)}`;
}

// 32 random hex digits. Not crypto.randomUUID(): browsers give it only to
// secure contexts (HTTPS, localhost), so over plain HTTP on a host name the
// page threw before sending anything; getRandomValues is there in both.
function runId() {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

function buildBody() {
  checkNumbers();
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
  const startFrom = form.elements.start_from;
  if (!startFrom.closest("[hidden]")) knobs.start_from = startFrom.value;
  const factors = {};
  for (const input of form.querySelectorAll(".service-factor")) {
    const value = Number(input.value);
    if (input.value.trim() !== "" && value !== 1) factors[input.dataset.component] = value;
  }
  knobs.service_factor = factors;
  const chosen = seed();
  return {
    workload,
    proposed: readProposed(),
    knobs,
    seed: chosen === null ? 1 : chosen,
    run_id: runId(),
  };
}

// DRF's nested errors -> [path, message] pairs.
function flatten(errors, prefix = "") {
  if (Array.isArray(errors)) {
    if (errors.every((e) => typeof e === "string")) {
      return errors.map((message) => [prefix, message]);
    }
    return errors.flatMap((e, i) => flatten(e, `${prefix}[${i}]`));
  }
  if (errors && typeof errors === "object") {
    return Object.entries(errors).flatMap(([key, value]) => {
      const path = key === "non_field_errors" ? prefix : prefix ? `${prefix}.${key}` : key;
      return flatten(value, path);
    });
  }
  return [[prefix, String(errors)]];
}

// The box an API path names on this page, or null (`knobs.queriers` is the
// Queriers box, `knobs.service_factor.ingester` the ingester's factor).
function boxOf(path) {
  const [head, key, component] = path.split(".");
  if (head === "workload") return workloadSelect;
  if (head === "seed") return form.elements.seed;
  if (head !== "knobs" || !key) return null;
  if (key === "service_factor") {
    return component ? form.querySelector(`.service-factor[data-component="${CSS.escape(component)}"]`) : null;
  }
  return form.elements[key] || null;
}

// "Queriers: must be at least 1" rather than the API's "knobs.queriers: ...";
// a path inside the JSON box is named as that box's, as its JSON spells it,
// and said under the box too. The first box named is marked and focused.
// Each line comes with the box it describes (null: none, or the JSON box,
// which its own line under it describes).
function errorLines(pairs) {
  for (const box of form.querySelectorAll("[aria-invalid]")) box.removeAttribute("aria-invalid");
  const inChanges = [];
  const lines = pairs.map(([path, message]) => {
    const box = boxOf(path);
    if (box) {
      box.setAttribute("aria-invalid", "true");
      return { text: `${labelOf(box)}: ${message}`, box };
    }
    if (path === "proposed" || path.startsWith("proposed.")) {
      const inside = path.slice("proposed.".length);
      const line = inside ? `Changes, at ${inside}: ${message}` : `Changes: ${message}`;
      inChanges.push(line);
      proposedBox.setAttribute("aria-invalid", "true");
      return { text: line, box: null };
    }
    return { text: path ? `${path}: ${message}` : message, box: null };
  });
  showProposedError(inChanges.join(" "));
  form.querySelector("[aria-invalid]")?.focus();
  return lines;
}

// The list under the form; each box named in it is described by its lines,
// so a screen reader on the box (the first one is focused) reads why.
function showErrors(lines) {
  for (const box of form.querySelectorAll('[aria-describedby^="sim-error-"]')) {
    box.removeAttribute("aria-describedby");
  }
  const described = new Map();
  errorList.replaceChildren(
    ...lines.map(({ text, box }, i) => {
      const li = document.createElement("li");
      li.id = `sim-error-${i}`;
      li.textContent = text;
      if (box) described.set(box, [...(described.get(box) || []), li.id]);
      return li;
    }),
  );
  for (const [box, ids] of described) box.setAttribute("aria-describedby", ids.join(" "));
  errorList.hidden = !lines.length;
}

// A press refused before anything was sent, said as a server refusal is: the
// status line says nothing ran and why, the box at fault is marked and has
// the focus, and its line is in the list (and, for Changes, under the box).
function refusedHere(error) {
  if (error instanceof UnreadableNumbers) {
    statusLine.textContent = "Nothing was simulated: fix the fields below.";
    showErrors(error.inputs.map((input) => ({ text: `${labelOf(input)}: not a number`, box: input })));
    error.inputs[0].focus();
    return;
  }
  if (!(error instanceof SyntaxError)) {
    statusLine.textContent = `Nothing was simulated: ${error.message}`;
    return;
  }
  statusLine.textContent = "Nothing was simulated: the changes are not valid JSON.";
  const line = `Changes: not valid JSON (${error.message})`;
  proposedBox.setAttribute("aria-invalid", "true");
  showProposedError(line);
  showErrors([{ text: line, box: null }]);
  proposedBox.focus();
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
      statusLine.textContent = `Simulating… ${Math.round(state.progress * 100)}% (${formatWait(state.elapsed_seconds)} of at most ${formatWait(state.time_limit_seconds)})`;
    }
  } catch (_) {
    /* a missed poll changes nothing: the next one catches up */
  }
}

async function run(event) {
  event.preventDefault();
  showErrors([]);
  showProposedError("");
  // Marks of the last refusal go: this run answers for the boxes as they are now.
  for (const box of form.querySelectorAll("[aria-invalid]")) box.removeAttribute("aria-invalid");
  // The last run's results go first: left up, they read as this press's
  // verdict beside "Nothing was simulated" (refused here or by the server),
  // "Cancelled." or a failure.
  document.getElementById("sim-results").hidden = true;
  let body;
  try {
    body = buildBody();
  } catch (error) {
    refusedHere(error);
    return;
  }
  const picked = workloadSelect.value;
  const controller = new AbortController();
  current = { runId: body.run_id, controller, timer: null };
  running(true);
  statusLine.textContent = "Simulating…";
  current.timer = setInterval(() => pollProgress(body.run_id), 500);
  try {
    const response = await fetch(form.dataset.url, {
      method: "POST",
      body: bodyText(body),
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      credentials: "same-origin",
      signal: controller.signal,
    });
    const answer = await response.json().catch(() => ({}));
    if (response.ok) {
      statusLine.textContent = `Done in ${formatTiming(answer.workload.elapsed_seconds)}.`;
      // A page that cannot show the answer says so, not that the server was away.
      try {
        // The seed as sent: parsed from the answer, one past 2**53 would
        // read rounded, though the run used it whole.
        render(
          { ...answer, workload: { ...answer.workload, seed: body.seed } },
          body.workload.window_seconds ?? null,
        );
        if (body.workload.kind === "scenario") scenarioConfigs.set(picked, answer.workload.config);
        showLiveConfig();
      } catch (error) {
        document.getElementById("sim-results").hidden = true;
        statusLine.textContent = `The answer arrived but could not be shown (${error.message}); reload the page.`;
      }
    } else if (response.status === 400) {
      statusLine.textContent = "Nothing was simulated: fix the fields below.";
      showErrors(errorLines(flatten(answer)));
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
    // Simulate was disabled while it ran, which dropped the focus to the
    // page, and Cancel is now: the keyboard's place goes back to Simulate.
    const lost = focusLost() || document.activeElement === cancelButton;
    running(false);
    if (lost) runButton.focus();
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

form.addEventListener("submit", run);
cancelButton.addEventListener("click", cancel);
workloadSelect.addEventListener("change", onWorkload);
quickLayout.addEventListener("change", () => setQuick("layout", quickLayout.value));
quickSelection.addEventListener("change", () => setQuick("component_selection", quickSelection.value));
proposedBox.addEventListener("input", syncQuickPickers);
onWorkload();
syncQuickPickers();
