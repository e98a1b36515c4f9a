// The drill-down's rows: a row as it comes off the wire (the positional
// array of dashboard/drill.py's _WireRow), the words for its fields (shared
// with the request dialog), and its <li>, built once and patched in place
// (drill_list.js: on the updates that find it in or near the view). Every
// text from the server goes in as text, never parsed as HTML, and shown
// through format.js's visible/iso: the query, names and ids are the
// clients' own, and a bidi control among them would reorder them.

import { setAttr, setText } from "./dom.js";
import { appendVisible, exactDuration, formatWait, iso } from "./format.js";
import { regexSpans } from "./regex_marks.js";

const SOURCES = { r: "rule", d: "default", x: "disabled" };

export function decodeRow(a) {
  return {
    id: a[0], client_id: a[1], tenant: a[2], component: a[3], priority: a[4], rule: a[5],
    source: SOURCES[a[6]] || "default", line: a[7], more: a[8], api_type: a[9], start: a[10],
    end: a[11], step: a[12], state: a[13] === "f" ? "in_flight" : "queued", since: a[14],
    attempts: a[15], querier: a[16], worker: a[17], running_since: a[18],
    frontend: { transport: a[19], address: a[20], name: a[21] }, replica: a[22], actor: a[23] || "",
    // Request ids are unique per replica only: rows are keyed by both (the server's row_key).
    key: `${a[22] || ""}/${a[0]}`,
  };
}

// Fills `el` with `text` (its hidden characters written out), the matches of `search` (any case) or of `regex`
// wrapped in <mark>. A regex is matched off the page's thread (regex_marks.js):
// its marks come a moment later, and none for one JavaScript cannot read
// (RE2 and JS differ at the edges) or that takes it too long.
function highlight(el, text, search, regex) {
  el.replaceChildren();
  appendVisible(el, text);
  if (regex) {
    const asked = (el._marking = `${regex}\u0000${text}`);
    regexSpans(regex, text).then((spans) => {
      if (spans && el._marking === asked) mark(el, text, spans);
    });
    return;
  }
  el._marking = null;
  if (!search) return;
  const literal = new RegExp(search.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi");
  mark(el, text, Array.from(text.matchAll(literal), (m) => [m.index, m.index + m[0].length]));
}

function mark(el, text, spans) {
  el.replaceChildren();
  let last = 0;
  for (const [start, end] of spans) {
    if (start > last) appendVisible(el, text.slice(last, start));
    const m = document.createElement("mark");
    appendVisible(m, text.slice(start, end));
    el.append(m);
    last = end;
  }
  if (last < text.length) appendVisible(el, text.slice(last));
}

export function ruleText(row) {
  if (row.source === "rule" && row.rule) return `rule ${row.rule[0] + 1}, attribute ${row.rule[1] + 1}`;
  return row.source === "disabled" ? "priorities disabled" : "default priority";
}

function agoText(now, t) {
  if (t === null || t === undefined) return "?";
  const d = now - t;
  return d <= 1 ? "now" : `${formatWait(d)} ago`;
}

export function rangeText(row, now) {
  const parts = [row.api_type];
  if (row.start !== null || row.end !== null) parts.push(`${agoText(now, row.start)} → ${agoText(now, row.end)}`);
  if (row.step) parts.push(`step ${exactDuration(row.step)}`); // as the explain box's Step
  return parts.join(" · ");
}

export function frontendText(f) {
  const who = f.name ? ` (${iso(f.name)})` : "";
  return `${f.transport === "grpc" ? "gRPC" : f.transport} ${iso(f.address)}${who}`;
}

// Attempts count the times a request was handed to a querier
// (scheduler_core's Request.attempts). It goes back to the queue only when
// its querier disconnected while running it, so a queued one with any was
// re-queued, and a running one past its first is that retry. None queued
// and one running are every request's ordinary course: nothing is said.
export function attemptText(row) {
  if (row.state === "in_flight") return row.attempts > 1 ? `attempt ${row.attempts}: a retry after a querier disconnected` : "";
  return row.attempts > 0 ? `re-queued after its querier disconnected (attempt ${row.attempts + 1} next)` : "";
}

// The oldest queued row by its enqueue instant, not its place: a higher
// priority, an actor's turn or a re-queue at the front dequeue newer
// requests first. Ties go to the one dequeued first; null without any.
export function oldestQueued(rows) {
  let oldest = null;
  for (const row of rows) {
    if (row.state === "queued" && (oldest === null || row.since < oldest.since)) oldest = row;
  }
  return oldest;
}

function button(className, text) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = className;
  b.textContent = text;
  return b;
}

// A new row's <li>: its Explain button, and for an `editor` its Cancel… button.
export function createRow(row, editor) {
  const li = document.createElement("li");
  li.className = "drill-row";
  li.dataset.key = row.key;
  li.dataset.id = row.id;
  li.innerHTML =
    '<div class="line"><span class="pos"></span><button type="button" class="expand" aria-expanded="false"></button>' +
    '<code class="q" dir="ltr"></code><span class="prio"></span><span class="wait"></span><span class="acts"></span></div>' +
    '<div class="meta muted"><span class="badge oldest-tag" hidden></span><span class="meta-text"></span></div>' +
    '<div class="full" hidden><pre class="query-text" dir="ltr"></pre></div>';
  // Every role may explain; its name says which request, as the expand button's does.
  const acts = li.querySelector(".acts");
  const explain = button("small explain-one", "Explain");
  explain.setAttribute("aria-label", `Explain ${iso(row.id)} in its tenant's rules`);
  explain.title = "Open the tenant's explain box on this request, as it was when queued";
  acts.append(explain);
  if (editor) acts.append(button("small danger cancel-one", "Cancel…"));
  return li;
}

// Patches `li` to show `row`, the `i`-th listed. `view` is what the panel
// knows around it: `filter` (its search or regex is highlighted), `open`
// (the full query is shown), `text` (that query, once fetched), `oldest`
// (the panel's { key, whole }, or null), `now` and `replicas` (the service
// has several, so each row says which one holds it), `left` (a held row
// whose request has left the queue: its last state is not said as now).
export function updateRow(li, row, i, view) {
  const { filter: f, open, text, oldest, now, replicas, left } = view;
  const cells = li._cells || (li._cells = {
    pos: li.querySelector(".pos"), expand: li.querySelector(".expand"), q: li.querySelector(".q"),
    prio: li.querySelector(".prio"), wait: li.querySelector(".wait"), meta: li.querySelector(".meta-text"),
    tag: li.querySelector(".oldest-tag"), full: li.querySelector(".full"), pre: li.querySelector(".full pre"),
  });
  setText(cells.pos, row.state === "in_flight" ? "▶" : String(i + 1));
  li.classList.toggle("running", row.state === "in_flight");
  markOldest(li, cells.tag, oldest && oldest.key === row.key ? oldest : null);
  const sig = `${row.line}|${f.search || ""}|${f.regex || ""}`;
  if (li._q !== sig) { li._q = sig; highlight(cells.q, row.line + (row.more ? " …" : ""), f.search, f.regex); }
  setText(cells.prio, `p${row.priority}`);
  cells.prio.title = ruleText(row);
  setText(cells.expand, open ? "▾" : "▸");
  cells.expand.setAttribute("aria-expanded", open ? "true" : "false");
  cells.expand.setAttribute("aria-label", `${open ? "Hide" : "Show"} the full query of ${iso(row.id)}`);
  cells.full.hidden = !open;
  if (open) {
    const fsig = `${text}|${sig}`;
    if (text !== undefined && li._full !== fsig) { li._full = fsig; highlight(cells.pre, text, f.search, f.regex); }
  }
  const tail = [
    iso(row.id), `${iso(row.tenant)} / ${row.component}`, ruleText(row), rangeText(row, now),
    frontendText(row.frontend) + (row.client_id !== null ? ` · id ${row.client_id}` : ""),
    attemptText(row),
    row.actor ? `actor ${iso(row.actor)}` : "",
    // A held row that left ends "· queued" no more: its wait says "left the queue".
    left ? "" : row.state === "in_flight" ? `on ${iso(row.querier)} worker ${row.worker}` : "queued",
    replicas && row.replica ? `replica ${iso(row.replica)}` : "",
  ].filter(Boolean).join(" · ");
  setText(cells.meta, tail);
  updateWait(li, row, now);
}

// Said in words ("oldest", or "oldest listed" when some matching queued
// requests are not listed and one of them may be older), not by colour only.
// `oldest`: the panel's { key, whole } when this row is the oldest, else null.
function markOldest(li, tag, oldest) {
  li.classList.toggle("oldest", oldest !== null);
  tag.hidden = oldest === null;
  if (!oldest) return;
  setText(tag, oldest.whole ? "oldest" : "oldest listed");
  setAttr(tag, "title", oldest.whole
    ? "The oldest queued request that matches: every one of them is listed"
    : "The oldest of the queued requests listed: not every one that matches is, and one further down may be older");
}

// The row's wait, ticked between updates from its "since" instants.
export function updateWait(li, row, now) {
  const text = row.state === "in_flight"
    ? `ran ${formatWait(now - row.running_since)} · waited ${formatWait(row.running_since - row.since)}`
    : `waiting ${formatWait(now - row.since)}`;
  setText(li._cells.wait, text);
}
