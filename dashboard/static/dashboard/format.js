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

// A wait or a run is never negative; one computed a moment off (a row
// stamped after its frame, a replica's clock a little ahead) reads 0, not
// "-0.0 s".
export function formatWait(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  seconds = Math.max(0, seconds);
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ${Math.floor(seconds % 60)}s`;
  return `${Math.floor(seconds / 3600)}h ${Math.floor((seconds % 3600) / 60)}m`;
}

export function formatRate(perSecond) {
  if (perSecond === null || perSecond === undefined) return "–";
  return perSecond >= 100 ? perSecond.toFixed(0) : perSecond.toFixed(1);
}

// The header's "Scheduler loop": its share of a core, and CPU per dispatched request.
// With several replicas it is the busiest one's, and names it.
export function loadText(load) {
  if (!load || typeof load.busy !== "number") return { busy: "–", cost: "", title: "" };
  const cost = typeof load.cpu_per_query_us === "number" ? `${formatMicros(load.cpu_per_query_us)}/query` : "";
  const notes = [];
  if (typeof load.lag_max === "number") notes.push(`the loop's worst delay over the last ${Math.max(1, Math.round(load.window))} s: ${formatSeconds(load.lag_max)}`);
  if (typeof load.replica === "string") notes.push(`the busiest replica: ${iso(load.replica)}`);
  return { busy: `${Math.round(load.busy * 100)}%`, cost, title: notes.join("; ") };
}

function formatMicros(us) {
  return us >= 10000 ? `${(us / 1000).toFixed(0)} ms` : `${us.toFixed(0)} µs`;
}

export function formatSeconds(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  if (seconds < 0.001) return `${(seconds * 1e6).toFixed(0)} µs`;
  if (seconds < 1) return `${(seconds * 1000).toFixed(seconds < 0.01 ? 1 : 0)} ms`;
  return `${seconds.toFixed(seconds < 10 ? 2 : 1)} s`;
}

export function nodeLabel(node) {
  if (node.kind === "others") return `others (${node.count} tenants): ${node.length} queued`;
  if (node.kind === "actor-others") return `others (${node.count} actors): ${node.length} queued`;
  if (node.kind === "actor") return `actor ${iso(node.name)}: ${node.length} queued`;
  return `${iso(node.name)}: ${node.length} queued`;
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
