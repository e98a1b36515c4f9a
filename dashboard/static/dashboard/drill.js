// The drill-down panel: one node's requests in dequeue order, live at the
// inspector's cadence (the server sends a `drill` section; see
// dashboard/drill.py), with the full query text, cancel one and cancel by
// filter through the REST API, and the request dialog (drill_request.js).
// Here are its filter boxes, its frames and what they list; each row's <li>
// is drill_rows.js, the list of them drill_list.js (patched in place, and
// only near its view); waits tick here from the rows' "since" instants.
// Nothing from the server is parsed as HTML; the clients' own text goes in
// through format.js's showText/iso (bidi controls).

import { setText } from "./dom.js";
import { DrillCancels } from "./drill_cancel.js";
import { DrillExplain, forgetDrill } from "./drill_explain.js";
import { DrillList, KeptHeight, focusRow } from "./drill_list.js";
import { decodeRow, oldestQueued } from "./drill_rows.js";
import { RequestDialog } from "./drill_request.js";
import { FIELD_NAMES, countNote, countText, emptyText, servingText, title } from "./drill_text.js";
import { tenantUsageText } from "./usage.js";
import { parseExact } from "./exact_json.js";
import { iso } from "./format.js";

// The box of each field the server may refuse, and its name on the page.
const FIELD_INPUTS = { search: "drill-search", regex: "drill-search", actor: "drill-actor", state: "drill-state", priority: "drill-priority", min_wait: "drill-min-wait" };
// The number boxes, and what each must hold (the server's words, in
// api/wire/queue_rows.py). Text the browser cannot read as a number (a lone
// "-", "1e") leaves a box's value empty, as if it were blank: sent so, its
// filter would be dropped without a word.
const UNREADABLE = { priority: "must be an integer", min_wait: "must be a number of seconds" };
const STEP = 50;
const MAX = 500;

export class DrillPanel {
  constructor(client, { editor, csrf, onOpen }) {
    this.client = client;
    this.editor = editor;
    this.onOpen = onOpen || (() => {});
    this.node = null;
    this.limit = STEP;
    this.rows = new Map(); // id -> decoded row (references resolve here)
    this.order = [];
    this.open = new Set(); // ids expanded by the user
    this.texts = new Map(); // id -> full query text fetched on expand
    this.skew = 0;
    this.typing = null; // the pending send of what is being typed in the boxes
    this.opener = null; // what had the focus when the panel opened
    this.reveal = false; // once its first rows are in: "rows" into view, or the "oldest" row too
    this.oldest = null; // { key, whole } of the oldest queued row; whole: of every one that matches
    this.serving = null; // who may serve the drilled tenant, as last sent
    this.usage = null; // the header's querier time per tenant, as last sent
    this.running = null; // the drilled tenant's running requests, at its rows' instant (or null)
    this.replicas = false; // the service has several (the header says): rows name theirs
    this.$ = (id) => document.getElementById(id);
    this.card = this.$("drill");
    this.list = this.$("drill-rows");
    this.rowList = new DrillList(this.list, { editor, fallback: this.$("drill-title") });
    this.height = new KeptHeight(this.card);
    this.wire();
    this.request = new RequestDialog(this);
    this.cancels = editor ? new DrillCancels(this, csrf) : null;
    this.explains = new DrillExplain(this);
    setInterval(() => this.tick(), 1000);
  }

  wire() {
    const changed = () => { clearTimeout(this.typing); this.typing = setTimeout(() => this.send(), 250); };
    for (const id of ["drill-search", "drill-actor", "drill-priority", "drill-min-wait"]) this.$(id).addEventListener("input", changed);
    for (const id of ["drill-regex", "drill-state"]) this.$(id).addEventListener("change", () => this.send());
    this.$("drill-form").addEventListener("submit", (e) => { e.preventDefault(); this.send(); });
    this.$("drill-close").addEventListener("click", () => this.close());
    // Escape closes it, but a search box holding text is the browser's to clear first.
    this.card.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && !e.defaultPrevented && !(e.target.matches('input[type="search"]') && e.target.value)) this.close();
    });
    this.$("drill-more").addEventListener("click", () => { this.limit = Math.min(MAX, this.limit + STEP); this.send(); });
    this.list.addEventListener("click", (e) => this.onClick(e));
  }

  // -- what the server is asked for -------------------------------------------

  filter() {
    const f = { ...this.node };
    const text = this.$("drill-search").value.trim();
    if (text) f[this.$("drill-regex").checked ? "regex" : "search"] = text;
    // The actor box starts at the node's path and may narrow or widen it.
    const actor = this.$("drill-actor").value.trim();
    if (actor) f.actor = actor;
    else delete f.actor;
    const state = this.$("drill-state").value;
    if (state) f.state = state;
    // Text, not a Number: one past 2**53 would be rounded (12345678901234567890
    // became 12345678901234567000) in the title and in the filter the server
    // reads, which takes the text as the integer it names. A whole number goes
    // as that integer's digits ("007" as 7), so the title names what is listed;
    // other text goes as typed, for the server to refuse at the box.
    const priority = this.$("drill-priority").value.trim();
    if (priority !== "") f.priority = /^-?\d+$/.test(priority) ? BigInt(priority).toString() : priority;
    const wait = this.$("drill-min-wait").value.trim();
    if (wait !== "") f.min_wait = Number(wait);
    return f;
  }

  message() {
    return this.node ? { type: "drill", ...this.filter(), limit: this.limit } : null;
  }

  // `oldest`: opened for the oldest queued request (the inspector's link),
  // whose row gets the focus once it is listed.
  show(node, { oldest = false } = {}) {
    this.node = node;
    this.limit = STEP;
    this.rows.clear();
    this.order = [];
    this.oldest = null;
    this.open.clear();
    this.texts.clear(); // apply() forgets only the texts of rows it still has
    this.$("drill-actor").value = node.actor || "";
    // Focus goes back here on close: the ≡ button (or link) that opened the panel.
    const from = this.card.contains(document.activeElement) ? null : document.activeElement;
    if (from) this.opener = from;
    this.card.hidden = false;
    // Left on the ≡ button, the next Tab went on through the tree, far from the panel.
    if (from) this.$("drill-title").focus();
    this.rowList.clear();
    this.showEmpty(""); // the last node's, until this one's first frame
    setText(this.$("drill-count"), ""); // the last node's, until this one's first frame
    this.serving = null;
    this.$("drill-serving").hidden = true; // the last node's, until this one's first frame
    this.running = null;
    this.showUsage();
    this.reveal = oldest ? "oldest" : "rows";
    this.send();
    this.onOpen();
  }

  // The header's querier time per tenant (usage.js): the drilled tenant's line.
  setUsage(usage) {
    this.usage = usage || null;
    this.showUsage();
  }

  showUsage() {
    const text = this.node ? tenantUsageText(this.node.tenant, this.usage, this.running) : "";
    setText(this.$("drill-usage"), text);
    this.$("drill-usage").hidden = !text;
  }

  // What the user's own action led to (a refusal, a cancel's outcome), apart
  // from the note the live updates rewrite: it stays until the user acts again.
  say(text, kind = "info") {
    const el = this.$("drill-message");
    el.hidden = !text;
    el.className = `msg msg-${kind} drill-message`;
    setText(el, text || "");
  }

  // Sends what the boxes say now if typing in them has not been sent yet: an
  // action on "what is listed" must act on what the user sees in the boxes,
  // and a late send must not clear the message that action leaves.
  flush() {
    if (this.typing === null) return;
    clearTimeout(this.typing);
    this.send();
  }

  // The filter was refused (`field`: why), by the server or here for a box
  // the browser cannot read. Its rows answered the filter before, so they
  // go; the error sits beside the field it names.
  refused({ field, message }) {
    if (!this.node) return;
    const input = this.$(FIELD_INPUTS[field] || "drill-search");
    const error = this.$("drill-filter-error");
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", "drill-filter-error");
    (field === "regex" ? this.$("drill-regex").closest("label") : input).after(error);
    setText(error, `${FIELD_NAMES[field] || field}: ${iso(message)}`);
    error.hidden = false;
    this.rows.clear();
    this.order = [];
    this.oldest = null;
    this.rowList.clear();
    setText(this.$("drill-count"), "");
    setText(this.$("drill-note"), "Nothing is listed until the filter is fixed.");
    // The title named the refused filter, as if its requests were listed.
    const { search, regex, min_wait, ...node } = this.filter();
    setText(this.$("drill-title"), `${title(node)}: nothing listed`);
    this.$("drill-more").hidden = true;
    this.$("drill-capped").hidden = true;
    this.showEmpty("");
  }

  // #drill-empty is a polite live region: emptied when hidden, so that it
  // is read each time it appears, and only then (a frame rewriting the same
  // text changes nothing to announce).
  showEmpty(text) {
    const empty = this.$("drill-empty");
    empty.hidden = !text;
    setText(empty, text);
  }

  // The first number box the browser cannot read, as a refusal ({ field, message }), or null.
  unreadable() {
    for (const [field, message] of Object.entries(UNREADABLE)) {
      if (this.$(FIELD_INPUTS[field]).validity.badInput) return { field, message };
    }
    return null;
  }

  send() {
    clearTimeout(this.typing);
    this.typing = null;
    this.say(null); // the user changed what is listed: an earlier outcome no longer applies
    this.$("drill-filter-error").hidden = true;
    for (const id of Object.values(FIELD_INPUTS)) {
      this.$(id).removeAttribute("aria-invalid");
      this.$(id).removeAttribute("aria-describedby");
    }
    const bad = this.unreadable();
    if (bad) {
      // Refused here, as the server refuses a filter it cannot serve, and
      // the drill asked before stops: its rows do not answer the boxes now.
      this.refused(bad);
      this.client.setDrill(null);
      return;
    }
    // Other rows are asked for: the next frame is drawn unheld, or the old
    // rows would stay under a resting pointer as if they answered the boxes.
    // The card's height is set afresh by that frame too (KeptHeight).
    this.rowList.hold.releaseNext();
    this.height.releaseNext();
    const message = this.message();
    // The title names what is listed: the node as narrowed or widened by the boxes.
    if (this.node) setText(this.$("drill-title"), title(this.filter()));
    if (this.cancels) this.cancels.sync(this.filter());
    this.client.setDrill(message);
    // Paused, no frame brings this list until Resume: said, not an empty panel.
    if (this.client.paused) setText(this.$("drill-note"), "Paused: these requests are listed when you resume.");
  }

  close() {
    const inside = this.card.contains(document.activeElement); // read before it is hidden
    forgetDrill();
    this.say(null);
    this.node = null;
    this.card.hidden = true;
    this.height.release();
    this.client.setDrill(null);
    // The ≡ button that opened it is gone when its tenant's queue emptied
    // (the tree drops the row): the focus would fall to <body> and the next
    // Tab start from the top of the page. The tree's tab stop takes it
    // instead, or its search box when the tree has no row.
    const back = [this.opener, document.querySelector('#tree [role="treeitem"][tabindex="0"]'), document.getElementById("search")];
    const to = back.find((el) => el && el.isConnected && !el.closest("[hidden]"));
    if (to && (to === this.opener || inside)) to.focus();
    this.opener = null;
  }

  // -- frames -----------------------------------------------------------------

  apply(section, ts) {
    // A frame already on its way when a box turned unreadable lists nothing either.
    if (!this.node || !section || this.unreadable() || this.forAnotherNode(section)) return;
    this.skew = Date.now() / 1000 - ts;
    if (section.unavailable) {
      setText(this.$("drill-note"), "The request list is served by the replica that holds the queue; this one has none running.");
      this.revealRows();
      return;
    }
    const order = [];
    for (const raw of section.rows) {
      const row = raw.length === 2 && raw[0] === "=" ? this.rows.get(raw[1]) : decodeRow(raw);
      if (!row) continue; // a reference we never had: the next full frame brings it
      this.rows.set(row.key, row);
      order.push(row);
    }
    const ids = new Set(order.map((r) => r.key));
    for (const id of this.rows.keys()) if (!ids.has(id)) { this.rows.delete(id); this.texts.delete(id); }
    this.order = order;
    const more = section.total > order.length;
    const missing = section.replicas_missing || [];
    // The oldest of the rows is the oldest of every queued request that
    // matches only when all of those are listed: none cut off by the limit
    // (the queued come first, so a running row listed means they all are),
    // by a bounded scan, or on a replica not (yet) answering.
    const whole = section.exact && !section.replicas_pending && !missing.length &&
      (!more || order.some((r) => r.state === "in_flight"));
    const oldest = oldestQueued(order);
    this.oldest = oldest && { key: oldest.key, whole };
    setText(this.$("drill-count"), countText(section, order.length));
    // Sent when it changed (a section without it keeps the last one).
    if (section.serving !== undefined) this.serving = section.serving;
    // The tenant's running count from the instant these rows were listed.
    this.running = typeof section.tenant_running === "number" ? section.tenant_running : null;
    this.showUsage();
    const serving = servingText(this.node.tenant, this.serving);
    setText(this.$("drill-serving"), serving);
    this.$("drill-serving").hidden = !serving;
    const where = (section.replicas_pending ? " Asking the other replicas for theirs…" : "") +
      (missing.length ? ` Not answering, so not listed: replica ${missing.map(iso).join(", ")}.` : "");
    setText(this.$("drill-note"), countNote(section, this.filter().state) + where);
    this.$("drill-more").hidden = !more || this.limit >= MAX;
    // At the cap, more match than can be listed: said, not a button gone without a word.
    this.$("drill-capped").hidden = !more || this.limit < MAX;
    this.showEmpty(order.length ? "" : emptyText(this.filter(), section, missing));
    this.render();
    // A frame asked before the boxes last changed does not answer them: the
    // one that does comes unheld too (send() released only the next frame).
    if (!this.answersBoxes(section)) this.rowList.hold.releaseNext();
    this.height.drawn(this.answersBoxes(section));
    this.revealRows();
  }

  // Whether the frame lists what the text boxes and the state ask for now.
  answersBoxes(section) {
    const listed = section.filter || {};
    const asked = this.filter();
    return ["search", "regex", "actor", "state"].every((k) => (listed[k] || "") === (asked[k] || ""));
  }

  // A frame already on its way when the panel moved to another node lists
  // that node's rows, most only as references to rows cleared since. Applied,
  // it would list a stray row or none and spend the opening's reveal on it:
  // opened for the oldest request, the focus would land on the wrong row or
  // on none. The next frame answers the node shown.
  forAnotherNode(section) {
    const listed = section.filter || {};
    return ["tenant", "component"].some((k) => (listed[k] || "") !== (this.node[k] || ""));
  }

  // The panel sits at the foot of the page: scrolled into view when it opens
  // with no rows yet, only its head would show once they arrive. So it is
  // scrolled to the top of the window with its first rows in it. Opened for
  // the oldest request, its row is brought into the list's view too and
  // takes the focus, so a keyboard or screen reader user lands on it.
  revealRows() {
    if (!this.reveal) return;
    const toOldest = this.reveal === "oldest";
    this.reveal = false;
    this.card.scrollIntoView({ block: "start" });
    const li = toOldest && this.oldest && this.list.querySelector(`[data-key="${CSS.escape(this.oldest.key)}"]`);
    if (!li) return;
    li.scrollIntoView({ block: "nearest" });
    focusRow(li);
  }

  now() { return Date.now() / 1000 - this.skew; }

  render() {
    const { oldest, replicas, open, texts } = this;
    this.rowList.render(this.order, { filter: this.filter(), oldest, now: this.now(), replicas, open, texts });
  }

  tick() {
    if (this.node && !this.client.paused) this.rowList.tick(this.now()); // paused with the inspector
  }

  async onClick(e) {
    const li = e.target.closest(".drill-row");
    if (!li) return;
    const row = this.rows.get(li.dataset.key);
    if (!row) {
      // A held list keeps a row whose request left (drill_list.js): its buttons say why they do nothing.
      if (li.classList.contains("left") && e.target.closest("button")) this.say("That request has left the queue.", "info");
      return;
    }
    if (e.target.closest(".cancel-one")) { if (this.cancels) this.cancels.askOne(row); return; }
    if (e.target.closest(".explain-one")) { this.explains.open(row); return; }
    if (!e.target.closest(".expand")) return;
    if (this.open.has(row.key)) this.open.delete(row.key);
    else {
      this.open.add(row.key);
      if (!this.texts.has(row.key)) {
        const detail = await this.fetchRequest(row.id, row.replica);
        this.texts.set(row.key, detail ? detail.query + (detail.query_truncated ? "\n… (cut: the full text is longer)" : "") : "(this request has left the queue)");
      }
    }
    this.render();
  }

  // -- one request ----------------------------------------------------------

  async fetchRequest(id, replica) {
    const where = replica ? `?replica=${encodeURIComponent(replica)}` : "";
    const response = await fetch(`${this.apiBase()}requests/${encodeURIComponent(id)}/${where}`, { credentials: "same-origin", headers: { Accept: "application/json" } });
    return response.ok ? parseExact(await response.text()) : null;
  }

  apiBase() { return document.getElementById("inspector").dataset.api; }

  // The request dialog on `id` (the inspector opens it from a busy worker).
  showRequest(id, known = "") { return this.request.show(id, false, known); }
}
