// Cancelling from the drill-down (editors only): one request, from its row
// or its detail dialog, or every queued request matching the panel's
// filter, through the REST API. Both ask first in the cancel dialog; a
// cancel by filter shows the count a dry run finds, counted again every
// second while the dialog is open (a count taken once said "53" of a queue
// that held 49 by the click). Each count comes with the instant it was
// taken at (`as_of`), and the cancel sends the instant of the count shown
// when Cancel is pressed (`enqueued_before`): requests that arrived since
// are not taken, so the operator who agreed to N never cancels more.

import { setText } from "./dom.js";
import { FIELD_NAMES, describe, narrowing } from "./drill_text.js";
import { clockTime, iso } from "./format.js";

export class DrillCancels {
  constructor(panel, csrf) {
    this.panel = panel;
    this.csrf = csrf;
    this.pending = null;
    this.$ = panel.$;
    this.$("drill-cancel-all").addEventListener("click", () => this.askMatching());
    this.$("request-cancel").addEventListener("click", () => this.askOne(panel.request.shown));
    this.$("cancel-back").addEventListener("click", () => this.$("cancel-dialog").close());
    // Confirm is the form's submit button, so Enter in the note confirms as a
    // click does: the form's own "dialog" submission would close the dialog
    // and drop the cancel without a word.
    this.$("cancel-form").addEventListener("submit", (e) => { e.preventDefault(); this.confirm(); });
    this.$("cancel-dialog").addEventListener("close", () => this.stopCounting());
    this.counting = null;
  }

  // The panel's filter changed: a running-only list has nothing a cancel by
  // filter could take (it cancels queued requests only), so say so there
  // rather than offer to cancel queued requests the list does not show.
  sync(filter) {
    const running = filter.state === "in_flight";
    this.$("drill-cancel-all").disabled = running;
    this.$("drill-cancel-why").hidden = !running;
  }

  buttons(confirm, back) {
    setText(this.$("cancel-confirm"), confirm);
    setText(this.$("cancel-back"), back);
  }

  askOne(row) {
    if (!row) return;
    this.panel.say(null);
    this.pending = { kind: "one", id: row.id, replica: row.replica };
    setText(this.$("cancel-title"), "Cancel this request?");
    this.buttons("Cancel the request", "Keep it");
    setText(this.$("cancel-text"), `${iso(row.id)} of ${iso(row.tenant)} / ${row.component}: its frontend is answered with a failure naming you, and the cancel is recorded on the History page.`);
    this.openDialog();
  }

  async askMatching() {
    this.panel.flush();
    // Without the box the browser cannot read, "every matching" would be more.
    if (this.panel.unreadable()) {
      this.panel.say("Not cancelled: first fix the filter box marked above.", "error");
      return;
    }
    this.panel.say(null);
    const filter = { ...this.panel.filter(), state: "queued", dry_run: true };
    if (!filter.tenant && !filter.search && !filter.regex) {
      this.panel.say("Cancelling by filter needs a tenant, or a search or regex.", "error");
      return;
    }
    const preview = await this.post("cancel/", filter);
    if (!preview.ok) { this.panel.say(`Not cancelled: ${preview.error}`, "error"); return; }
    delete filter.dry_run;
    const scope = `${describe(filter)}${narrowing(filter) ? ` ${narrowing(filter)}` : ""}`;
    if (preview.body.matched === 0) {
      // Asking "Cancel 0 queued requests?" offered a cancel of nothing.
      this.panel.say(`Nothing to cancel: no request of ${scope} is queued now.`, "info");
      return;
    }
    // Listed with the queued ones, running requests stay: say so beside the count.
    const running = this.panel.filter().state ? "" : " Running requests are not cancelled by filter.";
    const pending = { kind: "filter", filter, scope, running, matched: 0, asOf: null };
    this.pending = pending;
    this.buttons("Cancel them", "Keep them");
    this.showCount(pending, preview.body);
    this.openDialog();
    this.counting = setInterval(() => this.recount(pending), 1000);
  }

  // The count and its instant are kept together: Cancel sends the instant
  // of the count on screen, so what it may take is what the title says.
  showCount(pending, { matched, as_of: asOf }) {
    // Announced only when the number changes, not at each second's recount
    // (nor at the first count, which the dialog's description reads out).
    if (pending.asOf !== null && matched !== pending.matched) {
      setText(this.$("cancel-status"), matched ? `Now ${matched} queued request${matched === 1 ? "" : "s"} to cancel.` : "Nothing is queued to cancel now.");
    }
    pending.matched = matched;
    pending.asOf = asOf;
    const plural = matched === 1 ? "" : "s";
    const at = clockTime(asOf);
    setText(this.$("cancel-title"), matched ? `Cancel ${matched} queued request${plural}?` : "Nothing is queued to cancel now");
    setText(this.$("cancel-text"), matched
      ? `Every queued request of ${pending.scope}: ${matched} when counted at ${at}, counted again each second. Cancel takes those of them still queued when you press it, none that arrive after the count. Their frontends are answered with a failure naming you; the cancel is recorded on the History page.${pending.running}`
      : `No request of ${pending.scope} was queued when counted at ${at}; the count is taken again each second.`);
    // Nothing left to cancel: no greyed-out Cancel beside "Keep them", but
    // one Close, holding the focus if Cancel had it. They come back with a count.
    const confirm = this.$("cancel-confirm");
    if (!matched && document.activeElement === confirm) this.$("cancel-back").focus();
    // Disabled as well: Enter in the note would still submit through a hidden one.
    confirm.hidden = confirm.disabled = !matched;
    setText(this.$("cancel-back"), matched ? "Keep them" : "Close");
  }

  async recount(pending) {
    const preview = await this.post("cancel/", { ...pending.filter, dry_run: true });
    // A count answered after the dialog closed or confirmed says nothing,
    // nor one overtaken by a later count answered first.
    if (this.pending !== pending || !preview.ok || preview.body.as_of < pending.asOf) return;
    this.showCount(pending, preview.body);
  }

  stopCounting() {
    clearInterval(this.counting);
    this.counting = null;
    this.$("cancel-confirm").hidden = this.$("cancel-confirm").disabled = false;
  }

  openDialog() {
    this.$("cancel-note").value = "";
    this.$("cancel-error").hidden = true;
    setText(this.$("cancel-status"), "");
    this.$("cancel-dialog").showModal();
  }

  async confirm() {
    const pending = this.pending;
    if (!pending) return;
    this.pending = null; // a second Enter while the first is answered cancels nothing more
    clearInterval(this.counting);
    const note = this.$("cancel-note").value.trim();
    const result = pending.kind === "one"
      ? await this.post(`requests/${encodeURIComponent(pending.id)}/cancel/`, pending.replica ? { note, replica: pending.replica } : { note })
      : await this.post("cancel/", { ...pending.filter, enqueued_before: pending.asOf, note });
    if (!result.ok) {
      this.pending = pending; // still asked: the dialog stays open with the reason
      if (pending.kind === "filter") this.counting = setInterval(() => this.recount(pending), 1000);
      this.$("cancel-error").hidden = false;
      setText(this.$("cancel-error"), result.error);
      return;
    }
    this.$("cancel-dialog").close();
    const dialog = this.$("request-dialog");
    if (dialog.open) dialog.close();
    // Fewer taken than counted (others started running or were cancelled
    // meanwhile) is not a success to colour as one when none were taken.
    const taken = pending.kind === "one" || result.body.cancelled > 0;
    const text = pending.kind === "one" ? `Cancelled ${iso(pending.id)}.` : cancelledText(result.body.cancelled, pending);
    this.panel.say(text, taken ? "success" : "info");
  }

  async post(path, body) {
    const response = await fetch(`${this.panel.apiBase()}${path}`, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": this.csrf },
      body: JSON.stringify(body),
    });
    let data = null;
    try { data = await response.json(); } catch { data = null; }
    if (response.ok) return { ok: true, body: data };
    // Named as the page names its boxes ("RE2 regex: ..."), not as the API does.
    const named = (k) => (k === "non_field_errors" || k === "detail" ? "" : `${FIELD_NAMES[k] || k}: `);
    // The server's words may quote what was typed: shown as iso shows a name.
    const reason = data ? Object.entries(data).map(([k, v]) => `${named(k)}${iso([].concat(v).join("; "))}`).join(" ") : response.statusText;
    return { ok: false, error: response.status === 404 ? "That request has already left the queue." : reason };
  }
}

// What a confirmed cancel by filter did, against the count it was confirmed
// on. Those counted but not taken had been dispatched to a querier or
// cancelled by someone else between the count and the click.
function cancelledText(cancelled, { matched, asOf }) {
  const at = clockTime(asOf);
  if (cancelled >= matched) return `Cancelled ${cancelled} request${cancelled === 1 ? "" : "s"}: those queued when counted at ${at}.`;
  if (!cancelled) return `Nothing was cancelled: the ${matched} counted at ${at} had started running or left the queue before Cancel.`;
  const others = matched - cancelled;
  return `Cancelled ${cancelled} of the ${matched} requests counted at ${at}: the other${others === 1 ? "" : ` ${others}`} had started running or left the queue before the cancel.`;
}
