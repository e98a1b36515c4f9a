// Inspector page: wires the live client to the tree, figures, charts
// (inspector_charts.js), queriers and frontends panels (panels.js) and
// controls. The page was rendered by the server first; the first snapshot
// replaces it in place.

import { setAttr, setText as writeText } from "./dom.js";
import { emptyTreeText, formatRate, formatTiming, formatWait, iso, loadText, showText } from "./format.js";
import { DrillPanel } from "./drill.js";
import { returnToDrill } from "./drill_explain.js";
import { byId, setProp, setText } from "./ids.js";
import { InspectorCharts } from "./inspector_charts.js";
import { LiveClient } from "./live.js";
import { applyFrontends, applyQueriers, moveAmongWorkers } from "./panels.js";
import { TreeView } from "./tree.js";
import { applyUsage } from "./usage.js";
import { decodeFrontends, decodeQueriers, decodeTree } from "./wire.js";

const COMPONENTS = ["ingester", "store-gateway", "ingester-and-store-gateway", "unknown"];
// What the state pill says where the state's own name would not read well
// (declared before the client, whose constructor shows its first state).
const STATE_TEXT = { "too-many": "too many tabs" };
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

const tree = new TreeView($("tree"), () => resubscribe(false));
const charts = new InspectorCharts();

function defaults() {
  return params.projection === "component-first" ? COMPONENTS.map((c) => `c:${c}`) : [];
}

params.expanded = tree.openKeys(defaults());

const client = new LiveClient(root.dataset.ws, {
  params,
  onFrame: applyFrame,
  onState: showState,
  // A drill the server refused names the field: the panel marks it. A socket
  // refused for the login's socket cap says so (`limit`) on the state pill.
  onError: (msg) => {
    if (msg.drill) drill.refused(msg.drill);
    if (msg.limit !== undefined) $("live-state").title = msg.message;
  },
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

// Other rows asked for (a search, a projection, a page): the next frame is
// drawn unheld, though the pointer rests on the tree. An expand or collapse
// (the tree's own callback) keeps the hold.
function showOther(resetPage) {
  tree.releaseHold();
  resubscribe(resetPage);
}

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
  charts.apply(msg.chart, full);
}

function applyHeader(h) {
  setText("f-total", String(h.total));
  setText("f-tenants", String(h.tenants_queued));
  setText("f-oldest", formatWait(h.oldest_wait));
  setText("f-queriers", String(h.queriers));
  setText("f-workers", `${h.workers_busy}/${h.workers_total}`);
  setText("f-reserved", String(h.reserved_idle));
  markWarn("fig-reserved", h.reserved_idle > 0);
  applyStuck(h.stuck);
  setText("running-layout", h.layout);
  if (h.config_version !== undefined) {
    setText("config-version", `#${h.config_version}`);
    setAttr(byId("config-version"), "href", `/history/#v${h.config_version}`);
    setAttr(byId("config-version"), "aria-label", `Running config #${h.config_version}, on History`);
  }
  setText("cadence", `updates every ${h.interval} s`);
  // A peer that stopped publishing (hung, or killed) is named, not just left out.
  const down = h.replicas_down || [];
  const notes = [h.replicas ? iso(h.replicas.note) : "", down.length ? `not answering: ${down.map(iso).join(", ")}` : ""];
  setProp("replicas-note", "hidden", !h.replicas && !down.length);
  drill.replicas = Boolean(h.replicas);
  setText("replicas-note", notes.filter(Boolean).join("; "));
  markRunning(h.layout);
  const s = h.stats;
  if (!s) return;
  setText("f-dispatch", formatRate(s.rates.dispatched));
  setText("f-rejected", formatRate(s.rates.rejected));
  setText("f-cancelled", formatRate(s.rates.cancelled));
  setText("f-frontends", String(s.frontends));
  applyLoad(s.load);
  waitRows("wait-component", s.wait_by_component, (k) => k);
  waitRows("wait-priority", s.wait_by_priority, (k) => `p${k}`);
  applyUsage(s.usage);
  drill.setUsage(s.usage);
}

// Past this share of a core the loop, not the queriers, is what requests wait for.
const LOOP_BUSY_WARN = 0.85;

function applyLoad(load) {
  const text = loadText(load);
  setText("f-load", text.busy);
  setText("f-load-cost", text.cost);
  setAttr(byId("f-load"), "title", text.title || null);
  markWarn("fig-load", Boolean(load && load.busy >= LOOP_BUSY_WARN));
}

// A header figure's warning colour, touched only when it changes.
function markWarn(id, warn) {
  const fig = byId(id);
  if (fig.classList.contains("warn") !== warn) fig.classList.toggle("warn", warn);
}

let runningShown = null;
function markRunning(layout) {
  if (layout === runningShown) return;
  runningShown = layout;
  // Switched elsewhere (another tab, the API): the switch offers the other
  // layout again, and says which one it switches from.
  const other = layout === "tenant-first" ? "component-first" : "tenant-first";
  for (const input of document.querySelectorAll('.layout-switch input[name="layout"]')) input.value = other;
  for (const input of document.querySelectorAll('.layout-switch input[name="running"]')) input.value = layout;
  for (const span of document.querySelectorAll(".layout-switch .layout-other")) span.textContent = other;
  const button = document.getElementById("layout-switch");
  if (button) button.textContent = `Switch to ${other}…`;
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
    for (const text of [label(k), formatTiming(p50), formatTiming(p99), String(n)]) {
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
  markWarn("fig-stuck", stuck.leaves > 0);
  oldest = stuck.oldest;
  setProp("oldest-note", "hidden", !oldest);
  if (oldest) {
    setText("oldest-link", `${iso(oldest.tenant)} / ${oldest.component}`);
    setText("oldest-wait", `waiting ${formatWait(oldest.wait)}${oldest.wait > stuck.threshold ? " (stuck)" : ""}`);
  }
}
$("oldest-link").addEventListener("click", () => {
  if (oldest) drill.show({ tenant: oldest.tenant, component: oldest.component }, { oldest: true });
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
    showText(button, r[0]);
    button.setAttribute("aria-label", `Open running request ${iso(r[0])}`);
    writeText(li.lastElementChild, `${iso(r[1])} / ${r[2]} / p${r[3]} · ${iso(r[4])} #${r[5]}${r[7] ? ` · ${iso(r[7])}` : ""}`);
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
// What the line a request is opened from says of it, for its dialog if the
// request has finished by the time its detail is asked.
function knownOf(target) {
  const li = target.closest("li");
  if (target.classList.contains("open-request")) {
    return `${li.lastElementChild.textContent}, running ${li.firstElementChild.textContent}`;
  }
  const querier = target.closest("[data-querier]");
  return `${querier ? `${querier.dataset.querier} ` : ""}${target.textContent}`;
}
document.addEventListener("click", (e) => {
  const target = e.target.closest(".open-request, .w-busy[data-request]");
  if (target && target.dataset.request) drill.showRequest(target.dataset.request, knownOf(target));
  const tenant = e.target.closest(".open-tenant");
  if (tenant && tenant.dataset.tenant) drill.show({ tenant: tenant.dataset.tenant });
});
document.addEventListener("keydown", (e) => {
  const target = e.target.closest(".w-busy[data-request]");
  if (target && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); drill.showRequest(target.dataset.request, knownOf(target)); }
  else if (target && moveAmongWorkers(target, e.key)) e.preventDefault();
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

function showState(state) {
  const pill = $("live-state");
  pill.textContent = STATE_TEXT[state] || state;
  pill.dataset.state = state;
  pill.className = `pill pill-${state}`;
  if (state !== "too-many") pill.removeAttribute("title");
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
    showOther(true);
  });
}

let searchTimer = null;
$("search").addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => {
    params.search = $("search").value.trim();
    showOther(true);
  }, 200);
});
$("search-form").addEventListener("submit", (e) => e.preventDefault());
$("prev-page").addEventListener("click", () => {
  if (params.page > 0) { params.page -= 1; showOther(false); }
});
$("next-page").addEventListener("click", () => {
  if (params.page + 1 < pages) { params.page += 1; showOther(false); }
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
returnToDrill(drill); // the browser's Back from a request's explain box
client.connect();
