// Tenant editor: live hit counts beside each saved rule and attribute (polls
// GET /api/v1/tenants/<id>/rule-stats/ every few seconds), and the "Test
// against recent traffic" button, which posts the form as it stands (saved
// or not) and shows the dry run in place. Without this script the button
// re-renders the whole page with the same report, and no counts are shown.
// The counts include the requests of federated org IDs naming the tenant, as
// the REST answer does; a line lists those IDs. On a scaled-out service the
// counts are summed over the replicas whose counts could be read: each count
// says when that is not all of them, and a breakdown by replica opens below.

import { announce, focusLost, setAttr, setText } from "./dom.js";
import { servingText } from "./drill_text.js";
import { iso } from "./format.js";

const POLL_MS = 3000;
const form = document.getElementById("tenant-form");
const number = new Intl.NumberFormat("en");

// Each window said as a span ("5m 1,243" read as a duration). The REST
// answer's window names stay as they are: only the words are the page's.
const WINDOW_WORDS = { "5m": "last 5 min", "1h": "last hour", version: "since this version" };

function counts(matched) {
  return Object.entries(WINDOW_WORDS)
    .map(([name, words]) => `${words}: ${number.format(matched[name])}`)
    .join(" · ");
}

const HOUR = 3600;
const SETTLED = 300; // the 5m window full: before that, nothing matched says little

const span = (seconds) => (seconds < 120 ? `${Math.round(seconds)} s` : `${Math.round(seconds / 60)} min`);
const requests = (n) => `${number.format(n)} request${n === 1 ? "" : "s"}`;

// A rule or attribute that took nothing in the last hour while the tenant
// had traffic is flagged: it may have drifted from what queries look like.
// The counts restart with each version of the tenant's config, so a young
// one's hour is shorter: the line says how long was counted, and only
// flags once five minutes have been (a rule saved a second ago that has
// seen one request is not news).
function show(key, matched, total, verb, counting, partial) {
  const node = form.querySelector(`[data-hits="${key}"]`);
  if (!node) return;
  const none = total["1h"] > 0 && matched["1h"] === 0;
  const young = counting !== null && counting < HOUR;
  const settling = counting !== null && counting < SETTLED;
  let text = `${verb} in the ${counts(matched)}`;
  // Young, the 1h and version counts cover only what was counted (since the
  // save, or since the server started): "since this version 20" of a rule
  // saved yesterday read as all it ever took.
  if (young) text += ` (over the ${span(counting)} counted so far)`;
  if (none && !young) text = `${verb} nothing in the last hour, of ${requests(total["1h"])}`;
  else if (none) text = `${verb} nothing in the ${span(counting)} since this version, of ${requests(total["1h"])}`;
  setText(node, text + partial);
  setAttr(node, "class", none && !settling ? "hits idle" : "hits");
}

// The requests the tenant's priority rules and default could have taken: the
// total less those of federated IDs that another tenant's priority rules
// judged (counted in the total only), beside which a rule of this tenant's
// matching nothing says nothing about it.
function judgedHere(stats, federated) {
  const judged = { ...stats.total };
  for (const row of federated) {
    if (row.priority_rules_of === null || row.priority_rules_of === stats.tenant) continue;
    for (const name of Object.keys(judged)) judged[name] -= row.total[name];
  }
  return judged;
}

function whoseRules(row, tenant) {
  if (row.priority_rules_of === null) return "none of its tenants has priority enabled";
  if (row.priority_rules_of === tenant) return "judged by these priority rules";
  return `judged by ${iso(row.priority_rules_of)}'s priority rules`;
}

// Requests of federated org IDs naming the tenant (team|zeta) are in the
// counts above; this line names each ID and its part, so they are not taken
// for the tenant's own. The page has no place for it: made beside the
// default's line on the first answer that has any.
function showFederated(stats, federated) {
  let node = form.querySelector('[data-hits="federated"]');
  const anchor = form.querySelector('[data-hits="default"]');
  if (!node && (!federated.length || !anchor)) return;
  if (!node) {
    node = document.createElement("p");
    node.className = "help federated-hits";
    node.dataset.hits = "federated";
    anchor.closest("p").after(node);
  }
  node.hidden = !federated.length;
  const rows = federated.map((row) => `${iso(row.org_id)} ${counts(row.total)} (${whoseRules(row, stats.tenant)})`);
  setText(node, federated.length ? `Counted above, from federated org IDs naming ${iso(stats.tenant)}: ${rows.join("; ")}.` : "");
}

// The peers whose counts are not in the sums (hung, killed, not read yet,
// or every peer while Redis is unreachable), and the note when the peers'
// counts could not be read at all. Absent from a server of an earlier
// release, and empty for a lone replica: nothing is said then.
function scopeOf(stats) {
  return { missing: stats.replicas_missing ?? [], note: stats.replicas_note ?? null };
}

const names = (ids) => ids.map(iso).join(", ");

// What each count says after its numbers when the sums leave replicas out,
// short enough to repeat on every line: the whole story is in the line below.
function partialSuffix({ missing, note }) {
  if (note) return "; this replica's counts only";
  if (!missing.length) return "";
  return `; not counted: ${missing.length > 2 ? `${missing.length} replicas` : names(missing)}`;
}

function scopeSentences({ missing, note }) {
  const said = [];
  if (note) said.push(`Partial counts: ${note}.`);
  if (missing.length) {
    const one = missing.length === 1;
    said.push(
      `Not counted: ${names(missing)} (${one ? "its" : "their"} counts are not in: not answering, ` +
        `or not read yet). The counts on this page leave ${one ? "its" : "their"} requests out.`,
    );
  }
  return said.join(" ");
}

function cell(row, text, head = false) {
  const td = document.createElement(head ? "th" : "td");
  td.textContent = text;
  if (head) td.scope = "row";
  else td.className = "num";
  row.append(td);
}

// Each replica's part (of the tenant's own org ID, as the REST answer gives
// it) and how long it has counted: a restarted replica counts from its
// restart, so its part covers less than the others'. Rebuilt only when a
// poll changed it: a screen reader's place in an unchanged table is kept.
function replicaRows(tbody, stats, missing) {
  const key = JSON.stringify([stats.replicas, missing]);
  if (tbody._key === key) return;
  tbody._key = key;
  const rows = [];
  for (const r of stats.replicas) {
    const tr = document.createElement("tr");
    cell(tr, iso(r.replica), true);
    for (const name of Object.keys(WINDOW_WORDS)) cell(tr, number.format(r.total[name]));
    const counted = r.counting_seconds == null ? "unknown (an earlier release)" : span(r.counting_seconds);
    cell(tr, r.current ? counted : "on an earlier version: not in the sums");
    rows.push(tr);
  }
  for (const replica of missing) {
    const tr = document.createElement("tr");
    cell(tr, iso(replica), true);
    for (let i = 0; i < 3; i++) cell(tr, "–");
    cell(tr, "not counted");
    rows.push(tr);
  }
  tbody.replaceChildren(...rows);
}

function breakdown() {
  const details = document.createElement("details");
  details.dataset.hits = "by-replica";
  const summary = document.createElement("summary");
  const scroll = document.createElement("div");
  scroll.className = "table-scroll";
  const table = document.createElement("table");
  table.className = "compact";
  table.createCaption();
  const head = table.createTHead().insertRow();
  for (const text of ["Replica", ...Object.values(WINDOW_WORDS), "counted for"]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = text;
    head.append(th);
  }
  table.createTBody();
  scroll.append(table);
  details.append(summary, scroll);
  return details;
}

// The line under the default's (after the federated one): what the sums
// leave out, and, with several replicas, the breakdown an operator opens.
// Made once and updated in place, so an open breakdown stays open and the
// focus stays on its summary across polls.
function showReplicas(stats, scope, federated) {
  let node = form.querySelector('[data-hits="replicas"]');
  const anchor = form.querySelector('[data-hits="default"]');
  const several = stats.replicas.length + scope.missing.length > 1;
  const said = scopeSentences(scope);
  if (!node && ((!said && !several) || !anchor)) return;
  if (!node) {
    node = document.createElement("div");
    node.className = "help replica-hits";
    node.dataset.hits = "replicas";
    const line = document.createElement("p");
    line.className = "warn-text";
    line.dataset.hits = "not-counted";
    node.append(line, breakdown());
    (form.querySelector('[data-hits="federated"]') ?? anchor.closest("p")).after(node);
  }
  node.hidden = !said && !several;
  const line = node.querySelector('[data-hits="not-counted"]');
  setText(line, said);
  line.hidden = !said;
  const details = node.querySelector('[data-hits="by-replica"]');
  details.hidden = !several;
  setText(details.querySelector("summary"), `Counts by replica (${stats.replicas.length + scope.missing.length})`);
  const whose = federated.length ? "this tenant's own org ID (not the federated IDs naming it)" : "this tenant";
  setText(details.querySelector("caption"), `Requests of ${whose} each replica counted`);
  replicaRows(details.querySelector("tbody"), stats, scope.missing);
}

function render(stats) {
  if (String(stats.version) !== form.dataset.version) return; // saved since: reload shows it
  const total = stats.total;
  // Absent from a server of an earlier release: read as unknown, as before.
  const counting = stats.counting_seconds ?? null;
  const federated = stats.federated ?? [];
  const judged = judgedHere(stats, federated);
  const scope = scopeOf(stats);
  const partial = partialSuffix(scope);
  for (const rule of stats.priorities) {
    show(`rule-${rule.index}`, rule.matched, judged, "matched", counting, partial);
    for (const attr of rule.attributes) {
      show(`rule-${rule.index}-attr-${attr.index}`, attr.matched, judged, "matched", counting, partial);
    }
  }
  show("default", stats.default.matched, judged, "took", counting, partial);
  for (const attr of stats.rejection) {
    show(`reject-${attr.index}`, attr.rejected, total, "rejected", counting, partial);
  }
  showFederated(stats, federated);
  showReplicas(stats, scope, federated);
}

async function poll() {
  try {
    const response = await fetch(form.dataset.ruleStats, { credentials: "same-origin" });
    if (response.ok) render(await response.json());
  } catch (error) {
    // The next poll tries again; counts simply stay as they were.
  }
}

if (form && form.dataset.ruleStats) {
  poll();
  setInterval(poll, POLL_MS);
}

const box = document.getElementById("dry-run");
const button = document.getElementById("dry-run-button");
const output = document.getElementById("dry-run-output");
const status = document.getElementById("dry-run-status");

async function dryRun(event) {
  if (!box || !box.dataset.url) return;
  event.preventDefault();
  const data = new FormData(form);
  data.set("action", "dry-run");
  button.disabled = true;
  try {
    const response = await fetch(box.dataset.url, {
      method: "POST",
      body: data,
      headers: { "X-CSRFToken": data.get("csrfmiddlewaretoken") },
      credentials: "same-origin",
    });
    output.innerHTML = response.ok
      ? await response.text()
      : `<p class="error">The dry run failed (${response.status}).</p>`;
    sayServing(output);
  } catch (error) {
    output.innerHTML = '<p class="error">The server could not be reached.</p>';
  } finally {
    // The button was disabled while it asked, which dropped its focus to the page.
    const lost = focusLost();
    button.disabled = false;
    if (lost) button.focus();
  }
  announce(status, output);
}

// The dry run's "who would serve it" lines, now and with the form, in the
// drill-down's words (the box carries them as data).
function sayServing(root) {
  for (const line of root.querySelectorAll(".dry-run-serving[data-serving]")) {
    const { tenant, label, serving, below, sample } = line.dataset;
    const count = below === undefined ? null : { count: Number(below), sample: Number(sample) };
    const text = servingText(tenant, JSON.parse(serving), count);
    line.textContent = `${label}: ${text || "any querier may serve it; none is reserved."}`;
  }
}

if (button) button.addEventListener("click", dryRun);
if (output) sayServing(output); // a box the page was rendered with (no script posted it)
