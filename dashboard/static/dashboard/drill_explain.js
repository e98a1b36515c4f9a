// The drill-down's Explain on a row: the tenant's explain box (its editor
// page) filled with the request, which then explains it. The box runs the
// tenant's rules, saved or not, and says why the request got its priority.
// What goes across is the request as the queue lists it (GET
// queue/requests/{id}/: the full query, not the row's first line), in the
// box's own words: times as durations before the instant the request was
// queued, when it was classified, so a time_window rule is judged as it was
// then; the headers its rules read (the detail lists only those), and a
// metadata call's match[] selectors one a line, as the gRPC door kept them
// apart. The page reads it from the address's fragment (editor.js), never
// sent to the server nor logged. Every role may explain (viewers too).

import { exactDuration, iso } from "./format.js";

// The detail's headers by the explain box's name for each.
const HEADERS = [["User-Agent", "user_agent"], ["X-Dashboard-Uid", "dashboard_uid"], ["X-Panel-Id", "panel_id"]];
// The calls that carry a PromQL expression, not match[] selectors.
const EXPRESSIONS = new Set(["query", "query_range"]);

// Seconds as a duration the box reads ("1h30m", "1s500ms"), to the
// millisecond: Cortex counts a step and its windows in whole milliseconds.
// The same spelling as the rows' waits and ranges (format.js).
export const durationText = exactDuration;

// The box's fields for `detail` (the REST row) queued at `since` (unix
// seconds), as a fragment; or { problem } when the box cannot take it.
export function explainFragment(detail, since) {
  if (detail.query_truncated) {
    return { problem: `${iso(detail.id)}'s query is longer than the queue listing shows: explained, only its start would be judged.` };
  }
  const fields = new URLSearchParams({ from: detail.id, query: detail.query, api_type: detail.api_type });
  // The box takes times as durations ago: one after the request was queued has none.
  for (const key of ["start", "end"]) {
    const t = detail[key];
    if (t === null || t === undefined) continue;
    if (t > since) return { problem: `${iso(detail.id)}'s ${key} is after it was queued: the explain box takes times before then.` };
    fields.set(key, durationText(since - t));
  }
  if (detail.step) fields.set("step", durationText(detail.step));
  if (detail.actor) fields.set("actor_path", detail.actor);
  for (const [name, key] of HEADERS) if (detail.headers?.[name]) fields.set(key, detail.headers[name]);
  const selectors = selectorFields(detail);
  if (selectors.problem) return selectors;
  for (const [key, value] of selectors.fields) fields.set(key, value);
  return { fragment: `#explain?${fields}` };
}

// A metadata call's selectors for the box: its lines, and the query as
// their "," join (what the queue lists). An empty selector matches nothing
// and the box reads no empty line, so it is left out. Without the list (a
// websocket enqueue carries one query text) the box is told its query was
// judged as one selector, rather than split at guessed commas.
function selectorFields(detail) {
  if (EXPRESSIONS.has(detail.api_type)) return { fields: [] };
  if (!Array.isArray(detail.matchers)) return { fields: [["one_selector", "1"]] };
  const broken = detail.matchers.findIndex((s) => /[\r\n]/.test(s));
  if (broken >= 0) {
    return { problem: `${iso(detail.id)}'s match[] selector ${broken + 1} holds a line break: the explain box takes one selector a line (POST /api/v1/explain/ takes them as a list).` };
  }
  const selectors = detail.matchers.filter((s) => s !== "");
  return { fields: [["query", selectors.join(",")], ["matchers", selectors.join("\n")]] };
}

export class DrillExplain {
  // `panel`: the drill-down (its request lookups and its message line).
  constructor(panel) {
    this.panel = panel;
  }

  // Opens `row`'s tenant's explain box on it, or says in the panel why not.
  async open(row) {
    const { panel } = this;
    if (row.tenant.includes("|")) {
      panel.say(`${iso(row.tenant)} is a federated org ID, judged under its tenants' combined limits: no one tenant's explain box does that (POST /api/v1/explain/ does).`, "error");
      return;
    }
    const [detail, block] = await Promise.all([panel.fetchRequest(row.id, row.replica), blockStatus(row.tenant)]);
    const problem = detail === null ? `${iso(row.id)} has left the queue and finished: nothing to explain.`
      // No block, no editor page (where the box is): what it runs under instead.
      : block === 404 ? `${iso(row.tenant)} has no block of its own: its requests run under the default limits (Settings), with no rules to explain.`
      : block !== 200 ? `Its tenant could not be looked up (HTTP ${block}): try again.`
      : null;
    const found = problem ? { problem } : explainFragment(detail, row.since);
    if (found.problem) panel.say(found.problem, "error");
    else {
      remember(panel, row);
      // /tenants/new/ is the creation page: a tenant named "new" has only the long address.
      const page = row.tenant === "new" ? "new/edit/" : `${encodeURIComponent(row.tenant)}/`;
      window.location.assign(`/tenants/${page}${found.fragment}`);
    }
  }
}

// -- the browser's Back from the explain box ---------------------------------
// The drill-down lives in the page, not in its address (the inspector's own
// view is in the URL). So the drill state at the Explain press goes into the
// inspector's history entry (history.state, beside its URL), and the
// browser's Back to that entry opens the panel again as it was: the node, the
// filter boxes, how many rows were asked for, the rows opened (with their
// fetched texts), where the page and the list were scrolled, and the focus on
// the Explain button pressed. A reload or a link to the inspector opens it
// as always, without the panel.

// The filter boxes by id, and which property of each holds its state.
const BOXES = [["drill-search", "value"], ["drill-regex", "checked"], ["drill-actor", "value"], ["drill-state", "value"], ["drill-priority", "value"], ["drill-min-wait", "value"]];

// A row's top in the list's scrolled content.
const topIn = (list, li) => li.getBoundingClientRect().top - list.getBoundingClientRect().top + list.scrollTop;

// Where the list is scrolled, as the row at its top and how far into it: in
// pixels alone it came back rows further down once requests above had left
// the queue meanwhile, with the Explain button given the focus out of view.
// The pixels are kept for when that row has left too.
function listPlace(list) {
  const pixels = list.scrollTop;
  const top = [...list.children].find((li) => topIn(list, li) + li.offsetHeight > pixels);
  return { pixels, key: top ? top.dataset.key : null, into: top ? pixels - topIn(list, top) : 0 };
}

function putListPlace(list, { pixels, key, into }) {
  const li = key === null ? null : list.querySelector(`[data-key="${CSS.escape(key)}"]`);
  list.scrollTop = li ? topIn(list, li) + into : pixels;
}

// A panel closed stays closed on the browser's Back: left in the entry, its
// state reopened it after another link was followed from the inspector.
export function forgetDrill() {
  if (!history.state?.drill) return;
  const { drill, ...rest } = history.state;
  history.replaceState(rest, "");
}

function remember(panel, row) {
  const drill = {
    node: panel.node,
    boxes: BOXES.map(([id, prop]) => document.getElementById(id)[prop]),
    limit: panel.limit,
    open: [...panel.open],
    texts: [...panel.open].filter((key) => panel.texts.has(key)).map((key) => [key, panel.texts.get(key)]),
    scroll: { page: window.scrollY, list: listPlace(panel.list) },
    focus: row.key,
  };
  history.replaceState({ ...history.state, drill }, "");
}

// Opens `panel` as remembered, when this page was reached by Back (or Forward).
export function returnToDrill(panel) {
  const saved = history.state?.drill;
  const [entry] = performance.getEntriesByType("navigation");
  if (!saved || entry?.type !== "back_forward") return;
  panel.show(saved.node);
  BOXES.forEach(([id, prop], i) => { document.getElementById(id)[prop] = saved.boxes[i]; });
  panel.limit = saved.limit;
  panel.open = new Set(saved.open);
  panel.texts = new Map(saved.texts);
  panel.reveal = false; // its place is put back below, not scrolled to its head
  panel.send();
  // Once its rows are listed: the scroll and the focus where they were.
  const listed = new MutationObserver(() => {
    if (!panel.list.children.length) return;
    listed.disconnect();
    putListPlace(panel.list, saved.scroll.list);
    window.scrollTo(0, saved.scroll.page);
    const li = panel.list.querySelector(`[data-key="${CSS.escape(saved.focus)}"]`);
    li?.querySelector(".explain-one")?.focus({ preventScroll: true });
    // Rows between the top one and it may have left as well: never a focus out of view.
    li?.scrollIntoView({ block: "nearest" });
  });
  listed.observe(panel.list, { childList: true });
}

// The HTTP status of the tenant's block as the REST API serves it: 404 without one.
async function blockStatus(tenant) {
  const response = await fetch(`/api/v1/tenants/${encodeURIComponent(tenant)}/`, { credentials: "same-origin", headers: { Accept: "application/json" } });
  return response.status;
}
