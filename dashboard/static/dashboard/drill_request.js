// The request dialog: one request's detail (GET queue/requests/{id}/), opened
// from a busy worker in the queriers panel, followed while it is open. The
// drill-down panel owns it (its request lookups and the inspector's pause);
// its cancel button is drill_cancel.js's. The clients' own text goes in
// through format.js's iso/showText (bidi controls), never as HTML.

import { setText } from "./dom.js";
import { attemptText, frontendText, rangeText, ruleText } from "./drill_rows.js";
import { formatWait, iso, showText } from "./format.js";

export class RequestDialog {
  // `panel`: the drill-down (fetchRequest, the inspector client's pause).
  constructor(panel) {
    this.panel = panel;
    this.$ = panel.$;
    this.dialog = this.$("request-dialog");
    this.shown = null; // the detail shown: what the dialog's cancel cancels
    this.shownId = null;
    // What is known of the shown request if its detail is gone: the facts
    // last shown, or the line it was opened from. Demo requests finish in
    // well under a second, so a dialog that showed only "has left the
    // queue" was empty six times in six (QA).
    this.lastFacts = [];
    this.timer = null;
    this.$("request-close").addEventListener("click", () => this.dialog.close());
  }

  // `known`: what the line it was opened from said of it ("team-b /
  // ingester / p3 · q-1 #2, running 1.2s"), shown if its detail is gone.
  async show(id, following = false, known = "") {
    const { dialog } = this;
    if (!following) {
      this.shownId = id;
      this.lastFacts = known ? [["When opened", known]] : [];
    }
    const detail = await this.panel.fetchRequest(id);
    // A follow-up answered after the dialog closed (or turned to another
    // request) must not open it again.
    if (following && (!dialog.open || this.shownId !== id)) return;
    this.shown = detail;
    setText(this.$("request-title"), `Request ${iso(id)}`);
    const facts = this.$("request-facts");
    facts.replaceChildren();
    this.$("request-gone").hidden = detail !== null;
    this.$("request-query").hidden = detail === null;
    const cancel = this.$("request-cancel");
    if (cancel) {
      // Hidden while it has the focus, it dropped the focus to the page's body.
      if (detail === null && document.activeElement === cancel) this.$("request-close").focus();
      cancel.hidden = detail === null;
    }
    if (detail) this.lastFacts = requestFacts(detail);
    for (const [k, v] of this.lastFacts) {
      const dt = document.createElement("dt"); dt.textContent = k;
      const dd = document.createElement("dd"); dd.textContent = v;
      facts.append(dt, dd);
    }
    if (detail) showText(this.$("request-query"), detail.query, "ltr");
    if (!dialog.open) dialog.showModal();
    this.follow(id, detail);
  }

  // While the dialog is open it follows its request, as the list does: a
  // running one's time goes on, and one that ended says so. Paused with the
  // inspector; stops when the dialog closes, another request opens or this
  // one has finished.
  follow(id, detail) {
    clearTimeout(this.timer);
    if (detail === null) return;
    this.timer = setTimeout(() => {
      if (!this.dialog.open || this.shownId !== id) return;
      if (this.panel.client.paused) this.follow(id, detail);
      else this.show(id, true);
    }, 1000);
  }
}

// The dialog's [label, text] pairs for a request's detail.
function requestFacts(detail) {
  const now = Date.now() / 1000;
  const retry = attemptText(detail);
  return [
    ["Tenant / component", `${iso(detail.tenant)} / ${detail.component}`],
    ["Actor", detail.actor ? iso(detail.actor) : "(none)"],
    ["Priority", `${detail.priority} (${ruleText({ source: detail.source, rule: detail.rule && [detail.rule.priority_index, detail.rule.attribute_index] })})`],
    ["State", detail.state === "in_flight" ? `running on ${iso(detail.querier)} worker ${detail.worker} for ${formatWait(detail.running_seconds)}` : "queued"],
    ["Waited", formatWait(detail.wait_seconds)],
    ["Type and range", rangeText(detail, now)],
    ["Frontend", `${frontendText(detail.frontend)}${detail.client_id !== null ? ` · id ${detail.client_id}` : ""}`],
    ...(retry ? [["Attempts", retry]] : []),
    ["Replica", detail.replica ? iso(detail.replica) : ""],
  ];
}
