// The inspector's "Querier time" panel: which tenants held the queriers over
// the last minute (the header's stats.usage, built by api.wire.usage_block).
// Fair queuing shares the queue's turns by request, not by how long a request
// then holds its querier, so a tenant of slow queries can hold most workers
// while its queue looks no deeper than anyone's: this is where it shows.

import { setAttr } from "./dom.js";
import { formatTiming, iso, showText } from "./format.js";
import { byId, setProp, setText } from "./ids.js";

const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
// Whole seconds the figures reach back, and a row's part of all querier time.
const spanOf = (u) => Math.max(1, Math.round(u.span_seconds));
const percent = (share) => `${Math.round(share * 100)}%`;

export function workersText(held) {
  if (held > 0 && held < 0.05) return "<0.1";  // some time held, not "none"
  return held >= 10 ? held.toFixed(0) : held.toFixed(1);
}

// The card's head: how busy the queriers were, and over how long.
export function usageSummary(u) {
  const held = u.span_seconds > 0 ? u.querier_seconds / u.span_seconds : 0;
  const of = u.workers ? ` of ${u.workers}` : "";
  return `last ${spanOf(u)} s · ${workersText(held)}${of} workers busy on average · ${plural(u.tenant_count, "tenant")}`;
}

// Everything a row's cells abbreviate, for its title and accessible name.
export function usageRowText(r, u) {
  const parts = [
    `${iso(r.tenant)} held ${r.querier_seconds.toFixed(1)} worker-seconds in the last ${spanOf(u)} s`,
    `${workersText(r.workers_held)} workers on average, ${percent(r.share)} of all querier time`,
    `${plural(r.dispatched, "request")} dispatched, ${r.ended} ended, ${r.running} running now`,
  ];
  if (r.dispatched) parts.push(`queue wait mean ${formatTiming(r.wait_mean_seconds)}, max ${formatTiming(r.wait_max_seconds)}`);
  if (r.rejected) parts.push(`${plural(r.rejected, "request")} rejected by the queue (429)`);
  return parts.join("; ");
}

// The drill-down's line on a tenant's querier time ("" without a usage block).
// The header carries only the busiest tenants (dashboard.projections'
// USAGE_PANEL_ROWS); one below them is said to be, rather than given figures
// it does not have. `running`: how many of its requests run at the instant
// the panel's rows were listed (the drill section's tenant_running), which
// the line says in place of the block's: the block is built at most once a
// second, the rows four times as often, and "3 running now" beside four
// running rows is one quantity read twice. The window's figures (workers
// held, share, dispatched) move little in a second and stay the block's.
// Without it (scale-out: the section leaves it out) the block's count stands.
export function tenantUsageText(tenant, u, running = null) {
  if (!u || !tenant) return "";
  const span = spanOf(u);
  const r = u.tenants.find((row) => row.tenant === tenant);
  const who = iso(tenant);
  const now = running === null ? null : `${running} running now`;
  if (r) {
    const wait = r.dispatched ? `, mean queue wait ${formatTiming(r.wait_mean_seconds)}` : "";
    return `Querier time, last ${span} s: ${who} held ${workersText(r.workers_held)} workers on average, ` +
      `${percent(r.share)} of the worker time tenants held (${plural(r.dispatched, "request")} dispatched${wait}, ${now || `${r.running} running now`}).`;
  }
  if (u.tenant_count > u.tenants.length) {
    return `Querier time, last ${span} s: ${who} is not among the ${u.tenants.length} tenants that held the most worker time` +
      (running ? ` (${now}).` : ".");
  }
  // Not in the block, yet running: its runs began after the block was built.
  if (running) return `Querier time, last ${span} s: ${who}'s requests held no worker until a moment ago; ${now}.`;
  return `Querier time, last ${span} s: ${who}'s requests held no worker.`;
}

function cell(tr, cls) {
  const td = document.createElement("td");
  if (cls) td.className = cls;
  tr.append(td);
  return td;
}

function createRow() {
  const tr = document.createElement("tr");
  const open = document.createElement("button");
  open.type = "button";
  open.className = "link open-tenant";
  cell(tr, "tenant").append(open);
  const share = cell(tr, "share");
  share.innerHTML = '<span class="bar"><i></i></span> <span class="pct"></span>';
  cell(tr, "num");
  cell(tr, "num");
  cell(tr, "num");
  return tr;
}

function fillRow(tr, r, u) {
  const [tenant, share, workers, wait, rejected] = tr.children;
  const open = tenant.firstElementChild;
  open.dataset.tenant = r.tenant;
  showText(open, r.tenant);
  const text = usageRowText(r, u);
  setAttr(tr, "title", text);
  setAttr(open, "aria-label", `Open ${iso(r.tenant)}'s requests. ${text}`);
  share.querySelector("i").style.width = `${Math.min(100, r.share * 100).toFixed(1)}%`;
  share.querySelector(".pct").textContent = percent(r.share);
  workers.textContent = workersText(r.workers_held);
  wait.textContent = r.dispatched ? formatTiming(r.wait_mean_seconds) : "–";
  rejected.textContent = String(r.rejected);
  rejected.classList.toggle("warn-text", r.rejected > 0);
}

export function applyUsage(u) {
  const body = byId("usage");
  if (!u) return;
  const rows = u.tenants; // the header's, already cut to the panel's rows
  const sig = JSON.stringify([u.span_seconds, u.workers, u.tenant_count, rows]);
  if (body._sig === sig) return;
  body._sig = sig;
  setText("usage-summary", usageSummary(u));
  while (body.children.length > rows.length) body.lastElementChild.remove();
  rows.forEach((r, i) => {
    let tr = body.children[i];
    if (!tr) { tr = createRow(); body.append(tr); }
    fillRow(tr, r, u);
  });
  const more = u.tenant_count - rows.length;
  setProp("usage-table", "hidden", rows.length === 0);
  setProp("usage-empty", "hidden", rows.length > 0);
  setProp("usage-more", "hidden", more <= 0);
  setText("usage-more", more > 0 ? `${plural(more, "more tenant")} below these (GET /api/v1/queue/usage/ lists up to 500).` : "");
}
