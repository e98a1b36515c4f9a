// The inspector's queriers and frontends panels: built and patched in place,
// row by keyed row, from the live frames' `queriers` and `frontends` sections
// (decoded by wire.js).

import { byId, setProp, setText } from "./ids.js";
import { placeChildren, setAttr, splitKeyed } from "./dom.js";
import {
  formatWait, frontendLabel, frontendsCount, frontendsMissing, iso, querierState, showText, transportLabel,
  visibleHtml, workerText,
} from "./format.js";

// A querier article is head (header, reservations, shards) plus the worker
// list. Worker times tick on every update, so workers are patched item by
// item; the head is re-parsed only when its markup changes.
function querierHead(q) {
  const res = q.reservations.length
    ? `<p class="res">Reserved for ${q.reservations.map((r) => `<span class="chip">${visibleHtml(r.tenant)} · priority ≥ ${r.priority}</span>`).join("")}</p>`
    : "";
  const more = q.shard_tenants > q.shard_sample.length ? ", …" : "";
  const sample = q.shard_sample.length ? ` (${q.shard_sample.map(visibleHtml).join(", ")}${more})` : "";
  const unsharded = q.unsharded_tenants ? ` + ${q.unsharded_tenants} unsharded` : "";
  const state = querierState(q);
  const replica = q.replica ? `<span class="chip" title="the scheduler replica of this connection">replica ${visibleHtml(q.replica)}</span>` : "";
  return `<header><strong class="qid">${visibleHtml(q.id)}</strong><span class="badge badge-${q.state}">${state}</span>${replica}<span class="muted">${q.busy}/${q.workers.length} busy</span></header>` +
    `${res}<p class="shard muted">Shards: ${q.shard_tenants} sharded tenant${q.shard_tenants === 1 ? "" : "s"}${sample}${unsharded}</p>`;
}

const querierKey = (q) => `${q.id}\u0000${q.replica || ""}`;

function createQuerier(q) {
  const article = document.createElement("article");
  article._key = querierKey(q);
  article.dataset.querier = q.id;
  if (q.replica) article.dataset.replica = q.replica;
  const list = document.createElement("ol");
  list.className = "workers";
  article.append(list);
  return article;
}

function updateQuerier(article, q) {
  const state = querierState(q);
  const cls = `querier state-${q.state}`;
  if (article.className !== cls) article.className = cls;
  setAttr(article, "aria-label", `querier ${iso(q.id)}${q.replica ? ` on replica ${iso(q.replica)}` : ""}: ${state}`);
  const head = querierHead(q);
  const list = article.lastElementChild;
  if (article._head !== head) {
    article._head = head;
    while (article.firstElementChild !== list) article.firstElementChild.remove();
    list.insertAdjacentHTML("beforebegin", head);
  }
  const items = list.children;
  while (items.length > q.workers.length) list.lastElementChild.remove();
  q.workers.forEach((w, i) => {
    let li = items[i];
    if (!li) { li = document.createElement("li"); list.append(li); }
    // A busy worker's line is a button in its list item (a click or Enter
    // opens its request), named by the line itself; an idle one's is text.
    const request = w.state === "busy" && w.request ? w.request : "";
    let line = li.firstElementChild;
    if (Boolean(request) !== Boolean(line)) {
      line = request ? Object.assign(document.createElement("button"), { type: "button" }) : null;
      li.replaceChildren(...(line ? [line] : []));
      li._text = null;
      li.className = "";
    }
    const shown = line || li;
    const wcls = `w w-${w.state}`;
    if (shown.className !== wcls) shown.className = wcls;
    if (line && line.dataset.request !== request) line.dataset.request = request;
    const text = workerText(w);
    // The line ends in an ellipsis in a narrow card: its title has it whole.
    if (shown._text !== text) { shown._text = text; shown.textContent = text; shown.title = text; }
  });
}

// The busy workers are one Tab stop, as the tree is (28 busy workers were
// 28 stops between the tree and the rest of the page): the one last focused
// while it stays busy, else the first, takes Tab; arrow keys move among
// them (`moveAmongWorkers`).
function rovingWorkers(box) {
  const busy = Array.from(box.querySelectorAll(".w-busy[data-request]"));
  const stop = busy.includes(box._workerStop) ? box._workerStop : busy[0];
  box._workerStop = stop;
  for (const li of busy) li.tabIndex = li === stop ? 0 : -1;
}

// Arrow keys on a busy worker: focus the next (Down, Right) or previous (Up,
// Left) busy worker; true if the key was one of them.
export function moveAmongWorkers(li, key) {
  const step = { ArrowDown: 1, ArrowRight: 1, ArrowUp: -1, ArrowLeft: -1 }[key];
  if (!step) return false;
  const box = byId("queriers");
  const busy = Array.from(box.querySelectorAll(".w-busy[data-request]"));
  const next = busy[busy.indexOf(li) + step];
  if (next) {
    box._workerStop = next;
    for (const other of busy) other.tabIndex = other === next ? 0 : -1;
    next.focus();
  }
  return true;
}

export function applyQueriers(panel) {
  const box = byId("queriers");
  const more = box._more || (box._more = document.createElement("p"));
  more.className = "muted";
  more._key = "\u0001more";
  const keys = new Set(panel.queriers.map(querierKey));
  if (panel.hidden) keys.add(more._key);
  const { kept, stale } = splitKeyed(box, keys, (el) => el._key);
  for (const el of stale) el.remove();
  const wanted = panel.queriers.map((q) => {
    const article = kept.get(querierKey(q)) || createQuerier(q);
    updateQuerier(article, q);
    return article;
  });
  if (panel.hidden) {
    const text = `${panel.hidden} more queriers not shown.`;
    if (more.textContent !== text) more.textContent = text;
    wanted.push(more);
  }
  placeChildren(box, wanted);
  rovingWorkers(box);
  setProp("queriers-empty", "hidden", panel.queriers.length > 0);
  setText("queriers-count", `${panel.total} total${panel.reserved_idle.length ? ` · ${panel.reserved_idle.length} reserved & idle` : ""}`);
}

// Frontend rows are keyed by "transport address" (plus " replica" in the
// merged panel), the key the server renders into data-frontend, so the
// first frame adopts the server's rows. Each row remembers its cells' texts
// and rewrites only the changed ones (the connected-for cell changes on
// nearly every update, nothing else). The replica column exists only while
// more than one replica is present; merged rows always carry their replica,
// so a switch between one and several replicas replaces every row.
const frontendKey = (f) => (f.replica ? `${f.transport} ${f.address} ${f.replica}` : `${f.transport} ${f.address}`);

function createFrontend(key, withReplica) {
  const tr = document.createElement("tr");
  tr.dataset.frontend = key;
  tr.innerHTML = '<td><span class="badge"></span></td><td class="addr"></td><td class="token"></td>' +
    '<td class="num"></td><td class="num"></td><td class="num"></td>' +
    (withReplica ? '<td class="replica"></td>' : "");
  return tr;
}

// The address, identity and replica cells: text a client or a peer chose.
const FRONTEND_USER_CELLS = new Set([1, 2, 6]);

function updateFrontend(tr, f, withReplica) {
  setAttr(tr, "aria-label", frontendLabel(f));
  const cells = tr.cells;
  // A row the server drew: its user cells are written once all the same, as showText shows them.
  if (!tr._vals) tr._vals = Array.from(cells, (td, i) => (FRONTEND_USER_CELLS.has(i) ? null : td.textContent));
  const vals = [transportLabel(f.transport), f.address, f.name || "–", String(f.streams),
    String(f.outstanding), formatWait(f.for)];
  if (withReplica) vals.push(f.replica || "");
  vals.forEach((text, i) => {
    if (tr._vals[i] === text) return;
    tr._vals[i] = text;
    if (i === 0) {
      const badge = cells[0].firstElementChild;
      badge.className = `badge badge-${f.transport}`;
      badge.textContent = text;
    } else if (FRONTEND_USER_CELLS.has(i)) {
      showText(cells[i], text);
    } else {
      cells[i].textContent = text;
    }
  });
}

export function applyFrontends(panel) {
  const body = byId("frontends");
  const withReplica = (panel.replicas || []).length > 1;
  setProp("frontends-replica", "hidden", !withReplica);
  const keys = new Set(panel.frontends.map(frontendKey));
  const { kept, stale } = splitKeyed(body, keys, (el) => el.dataset.frontend);
  for (const el of stale) el.remove();
  const wanted = panel.frontends.map((f) => {
    const key = frontendKey(f);
    const tr = kept.get(key) || createFrontend(key, withReplica);
    updateFrontend(tr, f, withReplica);
    return tr;
  });
  placeChildren(body, wanted);
  const any = panel.frontends.length > 0;
  setProp("frontends-table", "hidden", !any);
  setProp("frontends-empty", "hidden", any);
  setProp("frontends-more", "hidden", !panel.hidden);
  setText("frontends-more", panel.hidden ? `${panel.hidden} more frontends not shown.` : "");
  setText("frontends-count", frontendsCount(panel));
  const missing = frontendsMissing(panel);
  setProp("frontends-missing", "hidden", !missing);
  setText("frontends-missing", missing);
}
