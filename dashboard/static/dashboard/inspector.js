// Inspector page: wires the live client to the tree, figures, charts,
// queriers and frontends panels and controls. The page was rendered by the server first;
// the first snapshot replaces it in place.

import { TimeChart } from "./timeseries.js";
import { placeChildren, setAttr, setText as writeText, splitKeyed } from "./dom.js";
import {
  emptyTreeText, formatRate, formatSeconds, formatWait, frontendLabel, frontendsCount,
  frontendsMissing, querierState, transportLabel, workerText,
} from "./format.js";
import { DrillPanel } from "./drill.js";
import { LiveClient } from "./live.js";
import { TreeView } from "./tree.js";
import { decodeFrontends, decodeQueriers, decodeTree } from "./wire.js";

const COMPONENTS = ["ingester", "store-gateway", "ingester-and-store-gateway", "unknown"];
const root = document.getElementById("inspector");
const $ = (id) => document.getElementById(id);

const params = {
  projection: root.dataset.projection,
  search: $("search").value,
  page: Number(root.dataset.page) || 0,
  page_size: Number(root.dataset.pageSize) || 50,
  expanded: [],
};
let pages = 1;
let chartPoints = [];

const tree = new TreeView($("tree"), () => resubscribe(false));
const ACCENT = "#2f5bd3";
const ORANGE = "#d9822b";
const queuedChart = new TimeChart($("chart-queued"), {
  yLabel: "requests",
  series: [{ label: "queued", color: ACCENT }],
});
const waitChart = new TimeChart($("chart-wait"), {
  yLabel: "seconds",
  series: [
    { label: "oldest queued", color: ACCENT, unit: "s" },
    { label: "p99 wait", color: ORANGE, unit: "s" },
  ],
});

function defaults() {
  return params.projection === "component-first" ? COMPONENTS.map((c) => `c:${c}`) : [];
}

params.expanded = tree.openKeys(defaults());

const client = new LiveClient(root.dataset.ws, {
  params,
  onFrame: applyFrame,
  onState: showState,
});

const csrfInput = document.querySelector('input[name="csrfmiddlewaretoken"]');
const drill = new DrillPanel(client, { editor: root.dataset.editor === "1", csrf: csrfInput ? csrfInput.value : "" });

// A tree node's key names its tenant and component (dashboard/wire.py): the
// drill-down lists that node's requests.
// An actor node drills into its leaf with the actor path of the actor nodes
// above it and itself (the leaf is the node just above the first actor).
function nodeFilter(key, chain = []) {
  const top = chain.findIndex((n) => n.kind === "actor");
  if (top > 0) {
    const actor = chain.slice(top).filter((n) => n.kind === "actor").map((n) => n.name).join("|");
    return { ...nodeFilter(chain[top - 1].key), actor };
  }
  const [prefix, rest] = [key.slice(0, 1), key.slice(2)];
  const cut = rest.lastIndexOf("/");
  const [first, second] = cut < 0 ? [rest, null] : [rest.slice(0, cut), rest.slice(cut + 1)];
  if (prefix === "c") return second === null ? { component: first } : { component: first, tenant: second };
  return second === null ? { tenant: first } : { tenant: first, component: second };
}
tree.onDrill = (key, chain) => drill.show(nodeFilter(key, chain));

function resubscribe(resetPage) {
  if (resetPage) params.page = 0;
  params.expanded = tree.openKeys(defaults());
  client.subscribe({ ...params });
  showInUrl();
}

function showInUrl() {
  const url = new URL(location.href);
  url.searchParams.set("projection", params.projection);
  if (params.search) url.searchParams.set("search", params.search);
  else url.searchParams.delete("search");
  url.searchParams.set("page", String(params.page));
  history.replaceState(null, "", url);
}

function applyFrame(msg, full) {
  if (msg.header) applyHeader(msg.header);
  if (msg.tree) applyTree(decodeTree(msg.tree), msg.params);
  if (msg.queriers) applyQueriers(decodeQueriers(msg.queriers));
  if (msg.frontends) applyFrontends(decodeFrontends(msg.frontends));
  if (msg.longest) applyLongest(msg.longest, msg.ts);
  if (msg.drill) drill.apply(msg.drill, msg.ts);
  if (full) chartPoints = msg.chart;
  else if (msg.chart.length) chartPoints = chartPoints.concat(msg.chart).slice(-300);
  if (full || msg.chart.length) drawCharts();
}

// Element lookups and last written values are remembered, so an update
// reads nothing back from the DOM and writes only what changed.
const nodes = new Map();
function byId(id) {
  let node = nodes.get(id);
  if (!node) { node = $(id); nodes.set(id, node); }
  return node;
}

function setText(id, text) {
  writeText(byId(id), text);
}

function setProp(id, name, value) {
  const node = byId(id);
  if (node[name] !== value) node[name] = value;
}

function applyHeader(h) {
  setText("f-total", String(h.total));
  setText("f-tenants", String(h.tenants_queued));
  setText("f-oldest", formatWait(h.oldest_wait));
  setText("f-queriers", String(h.queriers));
  setText("f-workers", `${h.workers_busy}/${h.workers_total}`);
  setText("f-reserved", String(h.reserved_idle));
  const warn = h.reserved_idle > 0;
  const fig = byId("fig-reserved");
  if (fig.classList.contains("warn") !== warn) fig.classList.toggle("warn", warn);
  applyStuck(h.stuck);
  setText("running-layout", h.layout);
  setText("cadence", `updates every ${h.interval} s`);
  setProp("replicas-note", "hidden", !h.replicas);
  setText("replicas-note", h.replicas ? h.replicas.note : "");
  markRunning(h.layout);
  const s = h.stats;
  if (!s) return;
  setText("f-dispatch", formatRate(s.rates.dispatched));
  setText("f-rejected", formatRate(s.rates.rejected));
  setText("f-cancelled", formatRate(s.rates.cancelled));
  setText("f-frontends", String(s.frontends));
  waitRows("wait-component", s.wait_by_component, (k) => k);
  waitRows("wait-priority", s.wait_by_priority, (k) => `p${k}`);
}

let runningShown = null;
function markRunning(layout) {
  if (layout === runningShown) return;
  runningShown = layout;
  for (const em of document.querySelectorAll(".projection em.running")) em.remove();
  const label = document.querySelector(`.projection input[value="${layout}"] + span`);
  if (label) label.insertAdjacentHTML("beforeend", ' <em class="running" title="the layout the scheduler runs">running</em>');
}

function waitRows(id, table, label) {
  const body = byId(id);
  const keys = Object.keys(table);
  const sig = keys.map((k) => `${k}:${table[k].join(",")}`).join("|");
  if (body._sig === sig) return;
  body._sig = sig;
  if (!keys.length) {
    body.innerHTML = '<tr><td colspan="4" class="muted">no dispatches yet</td></tr>';
    return;
  }
  body.replaceChildren(...keys.map((k) => {
    const [p50, p99, n] = table[k];
    const tr = document.createElement("tr");
    for (const text of [label(k), formatSeconds(p50), formatSeconds(p99), String(n)]) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.append(td);
    }
    return tr;
  }));
}

let oldest = null;
function applyStuck(stuck) {
  if (!stuck) return;
  tree.stuckAfter = stuck.threshold;
  setText("f-stuck", String(stuck.leaves));
  byId("f-stuck-label").title = `queues whose oldest request waited over ${formatWait(stuck.threshold)} (${stuck.tenants} tenant${stuck.tenants === 1 ? "" : "s"}); the threshold is a setting`;
  const fig = byId("fig-stuck");
  if (fig.classList.contains("warn") !== stuck.leaves > 0) fig.classList.toggle("warn", stuck.leaves > 0);
  oldest = stuck.oldest;
  setProp("oldest-note", "hidden", !oldest);
  if (oldest) {
    setText("oldest-link", `${oldest.tenant} / ${oldest.component}`);
    setText("oldest-wait", `waiting ${formatWait(oldest.wait)}${oldest.wait > stuck.threshold ? " (stuck)" : ""}`);
  }
}
$("oldest-link").addEventListener("click", () => {
  if (oldest) drill.show({ tenant: oldest.tenant, component: oldest.component });
});

// Longest running: [request, tenant, component, priority, querier, worker, since, replica].
let longestRows = [];
let longestSkew = 0;
function applyLongest(rows, ts) {
  longestRows = rows;
  longestSkew = Date.now() / 1000 - ts;
  const list = byId("longest");
  while (list.children.length > rows.length) list.lastElementChild.remove();
  rows.forEach((r, i) => {
    let li = list.children[i];
    if (!li) {
      li = document.createElement("li");
      li.innerHTML =
        '<span class="run-for"></span> <button type="button" class="link open-request"></button> <span class="muted"></span>';
      list.append(li);
    }
    const button = li.querySelector(".open-request");
    button.dataset.request = r[0];
    writeText(button, r[0]);
    button.setAttribute("aria-label", `Open running request ${r[0]}`);
    writeText(li.lastElementChild, `${r[1]} / ${r[2]} / p${r[3]} · ${r[4]} #${r[5]}${r[7] ? ` · ${r[7]}` : ""}`);
  });
  setProp("longest-empty", "hidden", rows.length > 0);
  tickLongest();
}
// How long each has run is the point of the list, so it leads each line.
function tickLongest() {
  const now = Date.now() / 1000 - longestSkew;
  Array.from(byId("longest").children).forEach((li, i) => {
    const r = longestRows[i];
    if (!r) return;
    writeText(li.firstElementChild, formatWait(now - r[6]));
    li.firstElementChild.title = `running for ${formatWait(now - r[6])}`;
  });
}
setInterval(() => { if (!client.paused) tickLongest(); }, 1000);
document.addEventListener("click", (e) => {
  const target = e.target.closest(".open-request, .w-busy[data-request]");
  if (target && target.dataset.request) drill.showRequest(target.dataset.request);
});
document.addEventListener("keydown", (e) => {
  const target = e.target.closest(".w-busy[data-request]");
  if (target && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); drill.showRequest(target.dataset.request); }
});

function applyTree(t, asked) {
  tree.render(t.nodes);
  pages = t.pages;
  // The server shows the last page for one past the end (a stale link, a
  // page that drained); the pager and the URL follow it. Only for a frame
  // built for the page asked for: an older frame must not undo a click.
  if (asked.page === params.page && t.page !== params.page) {
    params.page = t.page;
    showInUrl();
  }
  setText("page-info", `page ${t.page + 1} of ${t.pages}`);
  setProp("prev-page", "disabled", t.page <= 0);
  setProp("next-page", "disabled", t.page + 1 >= t.pages);
  setProp("tree-empty", "hidden", t.nodes.some((n) => n.length > 0));
  setText("tree-empty", emptyTreeText(asked.search, t.matching));
  setAttr(byId("tree"), "aria-label", `Queue tree (${t.projection})`);
}

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// A querier article is head (header, reservations, shards) plus the worker
// list. Worker times tick on every update, so workers are patched item by
// item; the head is re-parsed only when its markup changes.
function querierHead(q) {
  const res = q.reservations.length
    ? `<p class="res">Reserved for ${q.reservations.map((r) => `<span class="chip">${escapeHtml(r.tenant)} · priority ≥ ${r.priority}</span>`).join("")}</p>`
    : "";
  const more = q.shard_tenants > q.shard_sample.length ? ", …" : "";
  const sample = q.shard_sample.length ? ` (${q.shard_sample.map(escapeHtml).join(", ")}${more})` : "";
  const unsharded = q.unsharded_tenants ? ` + ${q.unsharded_tenants} unsharded` : "";
  const state = querierState(q);
  const replica = q.replica ? `<span class="chip" title="the scheduler replica of this connection">replica ${escapeHtml(q.replica)}</span>` : "";
  return `<header><strong class="qid">${escapeHtml(q.id)}</strong><span class="badge badge-${q.state}">${state}</span>${replica}<span class="muted">${q.busy}/${q.workers.length} busy</span></header>` +
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
  setAttr(article, "aria-label", `querier ${q.id}${q.replica ? ` on replica ${q.replica}` : ""}: ${state}`);
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
    const wcls = `w w-${w.state}`;
    if (li.className !== wcls) li.className = wcls;
    // A busy worker opens its request (click or Enter).
    const request = w.state === "busy" && w.request ? w.request : "";
    if ((li.dataset.request || "") !== request) {
      if (request) {
        li.dataset.request = request;
        li.tabIndex = 0;
        li.setAttribute("role", "button");
        li.setAttribute("aria-label", `worker ${w.id} runs ${request}: open it`);
      } else {
        delete li.dataset.request;
        li.removeAttribute("tabindex");
        li.removeAttribute("role");
        li.removeAttribute("aria-label");
      }
    }
    const text = workerText(w);
    if (li._text !== text) { li._text = text; li.textContent = text; }
  });
}

function applyQueriers(panel) {
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

function updateFrontend(tr, f, withReplica) {
  setAttr(tr, "aria-label", frontendLabel(f));
  const cells = tr.cells;
  if (!tr._vals) tr._vals = Array.from(cells, (td) => td.textContent);
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
    } else {
      cells[i].textContent = text;
    }
  });
}

function applyFrontends(panel) {
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

function drawCharts() {
  queuedChart.draw(chartPoints.map((p) => [p[0], p[1]]));
  waitChart.draw(chartPoints.map((p) => [p[0], p[2], p[4]]));
}

function showState(state) {
  const pill = $("live-state");
  pill.textContent = state;
  pill.dataset.state = state;
  pill.className = `pill pill-${state}`;
}

setInterval(() => {
  const age = client.age();
  setText("data-age", age === null ? "no data yet" : `data ${age < 1 ? "<1" : age.toFixed(0)} s old`);
}, 500);

$("pause").addEventListener("click", () => {
  const pausing = !client.paused;
  if (pausing) client.pause();
  else client.resume();
  $("pause").textContent = pausing ? "Resume" : "Pause";
  $("pause").setAttribute("aria-pressed", pausing ? "true" : "false");
});

for (const radio of document.querySelectorAll('input[name="projection"]')) {
  radio.addEventListener("change", () => {
    params.projection = radio.value;
    document.querySelector('#search-form input[name="projection"]').value = radio.value;
    resubscribe(true);
  });
}

let searchTimer = null;
$("search").addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => {
    params.search = $("search").value.trim();
    resubscribe(true);
  }, 200);
});
$("search-form").addEventListener("submit", (e) => e.preventDefault());
$("prev-page").addEventListener("click", () => {
  if (params.page > 0) { params.page -= 1; resubscribe(false); }
});
$("next-page").addEventListener("click", () => {
  if (params.page + 1 < pages) { params.page += 1; resubscribe(false); }
});

const layoutForm = $("layout-form");
if (layoutForm) {
  const dialog = $("layout-dialog");
  layoutForm.addEventListener("submit", (e) => {
    e.preventDefault();
    dialog.showModal();
  });
  $("layout-cancel").addEventListener("click", () => dialog.close());
}

window.inspectorClient = client;
window.inspectorDrill = drill; // for the benchmark (tests/load/drilldown_bench.py)
client.connect();
