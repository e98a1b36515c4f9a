// Formatting shared with dashboard/templatetags/dashboard_tags.py: keep both
// spelled the same so accessible names do not change on the first update.

// -- user-controlled text (tenant and actor names, query texts, querier ids) --
// A bidi control in such a string (U+202E RIGHT-TO-LEFT OVERRIDE, the
// U+2066..U+2069 isolates, U+200E/F marks) reorders the text around it, and
// zero-width and other format characters hide text: what an operator reads
// would not be what the scheduler holds (Trojan Source). Every such string is
// shown through these: each hidden character as its code point, "⟨U+202E⟩",
// and the string isolated from its neighbours. Tab, newline and carriage
// return are kept: a query's lines are its own.
const HIDDEN = /[\p{Cf}\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u034F\u115F\u1160\u2028\u2029\u3164\uFFA0]/gu;
// Letters written right to left (and Arabic digits): the only characters left,
// once the controls are shown, that can move text outside their string.
const RTL = /[\u0590-\u08FF\uFB1D-\uFDFF\uFE70-\uFEFE\u{10800}-\u{10FFF}\u{1E800}-\u{1EFFF}]/u;
const FSI = "\u2068";
const PDI = "\u2069";

const codePoint = (c) => `U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}`;

// `text` with each hidden character written out as "⟨U+XXXX⟩".
export function visible(text) {
  return String(text).replace(HIDDEN, (c) => `⟨${codePoint(c)}⟩`);
}

// `text` to go inside a sentence, a title or an accessible name: shown as
// `visible` does and, when it holds right-to-left letters, wrapped in a
// first-strong isolate so it cannot reorder the words around it (its own
// controls are written out, so none can close the isolate early). Plain
// left-to-right ids are left as they are.
export function iso(text) {
  const shown = visible(text);
  return RTL.test(shown) ? `${FSI}${shown}${PDI}` : shown;
}

// `text` cut where a hidden character is: [plain, hidden] pairs, either "".
function* pieces(text) {
  let last = 0;
  for (const m of text.matchAll(HIDDEN)) {
    yield [text.slice(last, m.index), m[0]];
    last = m.index + m[0].length;
  }
  yield [text.slice(last), ""];
}

const MARK_TITLE = "an invisible character in the text, written out so it cannot reorder or hide what you read";

// Appends `text` to `el` with each hidden character as a marked escape
// (<span class="hidden-char">⟨U+202E⟩</span>).
export function appendVisible(el, text) {
  for (const [plain, hidden] of pieces(String(text))) {
    if (plain) el.append(plain);
    if (!hidden) continue;
    const mark = document.createElement("span");
    mark.className = "hidden-char";
    mark.title = MARK_TITLE;
    mark.textContent = `⟨${codePoint(hidden)}⟩`;
    el.append(mark);
  }
}

const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

// The same as markup, isolated in a <bdi>, for a panel built as HTML.
export function visibleHtml(text) {
  let html = "";
  for (const [plain, hidden] of pieces(String(text))) {
    html += escapeHtml(plain);
    if (hidden) html += `<span class="hidden-char" title="${MARK_TITLE}">⟨${codePoint(hidden)}⟩</span>`;
  }
  return `<bdi>${html}</bdi>`;
}

// `el` shows `text` alone (its content replaced only when `text` changed),
// isolated from the text around it (the dir attribute isolates an inline
// element, as <bdi> does): "auto" for a name, "ltr" for a query.
export function showText(el, text, dir = "auto") {
  text = String(text);
  if (el.getAttribute("dir") !== dir) el.setAttribute("dir", dir);
  if (el._shown === text) return;
  el._shown = text;
  el._text = undefined; // dom.js's setText must not trust its memory of this node
  el.replaceChildren();
  appendVisible(el, text);
}

// -- durations ----------------------------------------------------------------
// Every duration the inspector shows is spelled in one notation: the units
// of Prometheus durations, which the rules' time windows, the explain box's
// Start, End and Step and its "Data read"
// (scheduler_core.durations.format_duration) are written in. A row's
// "2d10m ago" then reads against a rule's `start: 2d` and the box's
// "2d10m9s" without converting "48h 0m" in one's head. Each place rounds
// to the precision it needs first (a live wait to a tenth of a second, a
// timing to about three digits, the box to the millisecond), then
// `spellDuration` writes it. From a minute up: whole units largest first,
// none that is zero, y and w only when they divide it exactly (Prometheus
// prints 8d, not 1w1d). Below a minute a shown wait or timing is one unit
// with its decimals, as Go prints a duration ("9.9s", "1.2ms", "147µs"):
// "9s900ms" would tick in two places. Only `exact` spelling (what a
// Prometheus field must parse: the box's values, a step) writes "1s500ms".
const DURATION_UNITS = [
  ["y", 365 * 86_400_000_000, true], ["w", 7 * 86_400_000_000, true], ["d", 86_400_000_000, false],
  ["h", 3_600_000_000, false], ["m", 60_000_000, false], ["s", 1_000_000, false],
  ["ms", 1_000, false], ["µs", 1, false],
];
const MINUTE_US = 60_000_000;

// `seconds` rounded to the nearest multiple of `resolution` (seconds; half
// up) and spelled (see above). dashboard_tags.format_wait rounds and spells
// with the same float operations in the same order, so the server's first
// frame and every later one spell a wait alike. Never negative: a duration
// computed a moment off (a row stamped after its frame, a replica's clock a
// little ahead) reads "0s", not "-0.0 s".
export function spellDuration(seconds, resolution, exact = false) {
  const step = Math.max(1, Math.round(resolution * 1e6));
  let us = Math.floor((Math.max(0, seconds) * 1e6) / step + 0.5) * step;
  if (!Number.isSafeInteger(us)) return "–"; // past 285 years: no clock's
  if (us === 0) return "0s";
  if (!exact && us < MINUTE_US) {
    const [unit, size] = DURATION_UNITS.find(([, size]) => size <= us);
    let decimals = 0;
    while (size > step * 10 ** decimals) decimals += 1;
    return `${(us / size).toFixed(decimals)}${unit}`;
  }
  let text = "";
  for (const [unit, size, whole] of DURATION_UNITS) {
    if (whole && us % size) continue;
    const n = Math.floor(us / size);
    if (n) text += `${n}${unit}`;
    us -= n * size;
  }
  return text;
}

// A live wait or run: to a tenth of a second under 10 s (a request a moment
// old still reads "300ms"), to the second under an hour, then to the minute.
export function waitResolution(seconds) {
  return seconds < 10 ? 0.1 : seconds < 3600 ? 1 : 60;
}

export function formatWait(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  return spellDuration(seconds, waitResolution(seconds));
}

// A measured timing (a wait percentile, a mean queue wait, the loop's lag,
// CPU per query): about three digits, down to the microsecond.
export function formatTiming(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  const resolution = seconds < 0.001 ? 1e-6 : seconds < 0.01 ? 1e-5 : seconds < 0.1 ? 1e-4 : seconds < 1 ? 1e-3 : seconds < 10 ? 0.01 : waitResolution(seconds);
  return spellDuration(seconds, resolution);
}

// To the millisecond, as Cortex counts a step and its windows, in the
// notation a Prometheus field parses: what the explain box reads ("1h30m",
// "1s500ms").
export function exactDuration(seconds) {
  return spellDuration(seconds, 0.001, true);
}

export function formatRate(perSecond) {
  if (perSecond === null || perSecond === undefined) return "–";
  return perSecond >= 100 ? perSecond.toFixed(0) : perSecond.toFixed(1);
}

// The header's "Scheduler loop": its share of a core, and CPU per dispatched request.
// With several replicas it is the busiest one's, and names it.
export function loadText(load) {
  if (!load || typeof load.busy !== "number") return { busy: "–", cost: "", title: "" };
  const cost = typeof load.cpu_per_query_us === "number" ? `${formatTiming(load.cpu_per_query_us / 1e6)}/query` : "";
  const notes = [];
  if (typeof load.lag_max === "number") notes.push(`the loop's worst delay over the last ${Math.max(1, Math.round(load.window))} s: ${formatTiming(load.lag_max)}`);
  if (typeof load.replica === "string") notes.push(`the busiest replica: ${iso(load.replica)}`);
  return { busy: `${Math.round(load.busy * 100)}%`, cost, title: notes.join("; ") };
}

// A row's name for a screen reader, which reads it instead of the row: its
// priority mix too ("team-a: 98 queued (p0 90 · p3 8)"), not its oldest
// wait, which changes every tick and would be read out again each time.
export function nodeLabel(node) {
  const pairs = node.by_priority || [];
  const queued = `${node.length} queued${pairs.length ? ` (${priorityText(pairs)})` : ""}`;
  if (node.kind === "others") return `others (${node.count} tenants): ${queued}`;
  if (node.kind === "actor-others") return `others (${node.count} actors): ${queued}`;
  if (node.kind === "actor") return `actor ${iso(node.name)}: ${queued}`;
  return `${iso(node.name)}: ${queued}`;
}

// As it is written in its row (showText and `visible` show what it hides).
export function nodeName(node) {
  if (node.kind === "others") return `${node.name} (${node.count} tenants)`;
  if (node.kind === "actor-others") return `${node.name} (${node.count} actors)`;
  return node.name;
}

// What an empty tree says (the template says the same): a search that
// matches no tenant is not an empty queue.
export function emptyTreeText(search, matching) {
  return search && !matching ? `No tenant matches “${iso(search)}”.` : "Nothing queued.";
}

export function priorityClass(priority) {
  return `pc-${Math.max(0, Math.min(priority, 5))}`;
}

export function priorityText(pairs) {
  return pairs.map(([p, c]) => `p${p} ${c}`).join(" · ");
}

const STATES = {
  busy: "busy",
  idle: "idle",
  "reserved-idle": "reserved · idle",
  "shutting-down": "shutting down",
  disconnected: "disconnected (kept)",
};

export function querierState(q) {
  return STATES[q.state] || q.state;
}

export function workerText(w) {
  const took = formatWait(w.for);
  if (w.state === "busy") return `#${w.id} busy · ${iso(w.tenant)} / ${w.component} / p${w.priority} · ${took}`;
  if (w.state === "waiting") return `#${w.id} waiting for work · ${took}`;
  return `#${w.id} idle · ${took}`;
}

export function transportLabel(transport) {
  return transport === "grpc" ? "gRPC" : transport;
}

export function frontendLabel(f) {
  const on = f.replica ? ` on replica ${iso(f.replica)}` : "";
  return `${transportLabel(f.transport)} frontend ${iso(f.address)}${on}: ${f.outstanding} outstanding`;
}

export function frontendsCount(panel) {
  let where = "total";
  if (panel.local_only) {
    const every = (panel.replicas || []).length;
    const listed = every - (panel.missing || []).length;
    where = listed > 1 ? `on ${listed} of ${every} replicas` : "on this replica";
  }
  return `${panel.total} ${where} · ${panel.outstanding} outstanding`;
}

export function frontendsMissing(panel) {
  const missing = panel.missing || [];
  if (!missing.length) return "";
  if (missing.length === 1) {
    return `Not listed: the frontends of replica ${iso(missing[0])}, which does not publish them.`;
  }
  return `Not listed: the frontends of replicas ${missing.map(iso).join(", ")}, which do not publish them.`;
}

// An instant (unix seconds) as the inspector shows a time: the time of day
// in the browser's zone, with that zone's offset: History writes
// the same instant in UTC ("23:15:10 UTC"), and "18:15:10 UTC−5" can be
// matched with it where a bare "18:15:10" could not. h23: "hour12: false"
// wrote the hour after midnight as "24" in Chromium.
export function clockTime(seconds) {
  const at = new Date(seconds * 1000);
  const time = at.toLocaleTimeString([], { hourCycle: "h23" });
  const east = -at.getTimezoneOffset(); // minutes, at that instant (summer time included)
  if (!east) return `${time} UTC`;
  const hours = Math.floor(Math.abs(east) / 60);
  const minutes = Math.abs(east) % 60;
  return `${time} UTC${east < 0 ? "−" : "+"}${hours}${minutes ? `:${String(minutes).padStart(2, "0")}` : ""}`;
}
