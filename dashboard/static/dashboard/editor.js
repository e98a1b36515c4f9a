// Tenant editor: the Explain button asks the server about the rules as they
// stand in the form (saved or not) and shows the answer in place. Without
// this script the same button re-renders the whole page with the answer.
// It also keeps the editor's place across the server-side edit buttons and
// asks before a page with unsaved edits is left.

import { announce, focusLost } from "./dom.js";
import { iso } from "./format.js";
import { askBeforeLeaving } from "./leave_guard.js";
import "./yaml_view.js";

const form = document.getElementById("tenant-form");
const box = document.getElementById("explain");
const output = document.getElementById("explain-output");
const button = document.getElementById("explain-button");
const status = document.getElementById("explain-status");

// `event`: the press that asked, held back from posting the whole page; none for a request filled in below.
async function explain(event) {
  const url = box.dataset.url;
  if (!url) return; // a tenant not created yet: fall back to the full-page post
  event?.preventDefault();
  const data = new FormData(form);
  data.set("action", "explain");
  button.disabled = true;
  try {
    const response = await fetch(url, {
      method: "POST",
      body: data,
      headers: { "X-CSRFToken": data.get("csrfmiddlewaretoken") },
      credentials: "same-origin",
    });
    output.innerHTML = response.ok
      ? await response.text()
      : `<p class="error">The explain request failed (${response.status}).</p>`;
  } catch (error) {
    output.innerHTML = '<p class="error">The server could not be reached.</p>';
  } finally {
    // Explain was disabled while it asked, which dropped its focus to the page.
    const lost = focusLost();
    button.disabled = false;
    if (lost) button.focus();
  }
  announce(status, output);
}

// A request sent from the inspector's drill-down (drill_explain.js) in the
// address's fragment: every box of it filled (one it leaves out blank, not
// at its default: an instant query has no step, a request without a header
// sent none), then explained at once.
const ASKED = "#explain?";
if (location.hash.startsWith(ASKED) && box.dataset.url) {
  const asked = new URLSearchParams(location.hash.slice(ASKED.length));
  for (const input of box.querySelectorAll('[name^="explain_"]')) {
    input.value = asked.get(input.name.slice("explain_".length)) ?? "";
  }
  const from = document.getElementById("explain-from");
  // A metadata call whose selectors the queue could not keep apart: judged,
  // there and here, as one selector, which the operator is told.
  const joined = asked.has("one_selector")
    ? " Its match[] selectors were not kept apart (a websocket enqueue carries one query text): the scheduler judged that text as one selector, and so does this box."
    : "";
  from.textContent = `Filled in from request ${iso(asked.get("from") || "")}: its times as when it was queued, ` +
    `and of its headers the three rules read (User-Agent, X-Dashboard-Uid, X-Panel-Id).${joined}`;
  from.hidden = false;
  box.scrollIntoView({ block: "start" });
  explain();
}

// A viewer's checkboxes read as saved (checkboxes have no readonly; disabled
// ones would be left out of the explain and dry-run posts).
for (const box of form.querySelectorAll("input[type=checkbox][data-readonly]")) {
  box.addEventListener("click", (event) => event.preventDefault());
}

button.addEventListener("click", explain);
document.getElementById("explain_query").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) explain(e);
});
// Enter in one of the box's one-line inputs explains, as its button does,
// rather than pressing the editor form's default button (Save's review).
box.addEventListener("keydown", (e) => {
  if (e.key !== "Enter" || !e.target.matches("input")) return;
  e.preventDefault();
  if (box.dataset.url) explain(e);
  else form.requestSubmit(button); // a tenant not created yet: the full-page post
});

// A refused draft: the first box in error takes the focus, else (an error on
// a whole rule or attribute) the summary that counts them, unless the YAML
// view has put it on the first line in error.
const firstError =
  document.querySelector('[aria-invalid="true"]') ||
  (focusLost() ? document.getElementById("error-summary") : null);
if (firstError) firstError.focus();

// The rule and attribute buttons re-render the page on the server (the form
// works without this script); the editor comes back where it was rather
// than at the top, and the focus with it: on what the button made or moved,
// else on the button again, else on its nearest neighbour (the keyboard
// went back to the top of the page). Save is left out: its review is shown
// at the top and holds the focus.
const PLACE = "tenant-editor-place";
form.addEventListener("submit", (event) => {
  leaveOnPurpose();
  const action = event.submitter ? event.submitter.value : "";
  // "Simulate this change" posts to another page: no place to come back to.
  if (action && action !== "save" && !event.submitter.hasAttribute("formaction")) {
    sessionStorage.setItem(
      PLACE,
      JSON.stringify({ path: location.pathname, y: window.scrollY, action }),
    );
  }
});

const enabledButton = (value) =>
  document.querySelector(`button[value="${CSS.escape(value)}"]:not(:disabled):not(.default-action)`);
const ruleBox = (i) => document.getElementById(`query_priority.priorities[${i}].priority`);
const attributes = (scope) => [...form.querySelectorAll(`${scope} fieldset.attribute`)];
const firstBox = (attribute) => attribute?.querySelector("input:not([type=hidden]), select") ?? null;

function focusTarget(action) {
  const [verb, a, b] = action.split(":");
  const i = Number(a);
  const rules = form.querySelectorAll("li.rule").length;
  switch (verb) {
    case "add-rule":
      return ruleBox(rules - 1);
    case "remove-rule":
      return ruleBox(Math.min(i, rules - 1)) || enabledButton("add-rule");
    case "up":
      return enabledButton(`up:${i - 1}`) || enabledButton(`down:${i - 1}`);
    case "down":
      return enabledButton(`down:${i + 1}`) || enabledButton(`up:${i + 1}`);
    case "add-attr":
      return firstBox(attributes(`[data-rule="${i}"]`).at(-1));
    case "remove-attr": {
      const left = attributes(`[data-rule="${i}"]`);
      return firstBox(left[Math.min(Number(b), left.length - 1)]) || enabledButton(`add-attr:${i}`);
    }
    case "add-reject-attr":
      return firstBox(attributes("#rejection").at(-1));
    case "remove-reject-attr": {
      const left = attributes("#rejection");
      return firstBox(left[Math.min(i, left.length - 1)]) || enabledButton("add-reject-attr");
    }
    default: // the view switch; explain and dry-run posted whole (a tenant not created yet)
      return enabledButton(action);
  }
}

const place = JSON.parse(sessionStorage.getItem(PLACE) || "null");
sessionStorage.removeItem(PLACE);
if (place && place.path === location.pathname && !firstError) {
  window.scrollTo(0, place.y);
  if (focusLost()) focusTarget(place.action || "")?.focus();
}

// Leaving with unsaved edits asks first: while the draft (the form's boxes,
// or the YAML view's text) differs from what the page was loaded with. Read
// from the fields, not from input events: the YAML editor takes a paste,
// Enter, Backspace and undo itself, without one. A page the server rendered
// from a post (an edit button, a refused save, the review) is itself an
// unsaved draft. The change note and the explain box are not the draft.
// Every submit (Save, an edit button, "Simulate this change", which posts
// the draft to Simulate) and "Discard changes" leave on purpose.
const NOT_DRAFT = new Set(["csrfmiddlewaretoken", "message", "action"]);
function draftNow() {
  const fields = [...new FormData(form)].filter(
    ([name]) => !NOT_DRAFT.has(name) && !name.startsWith("explain_"),
  );
  return JSON.stringify(fields.map(([name, value]) => [name, String(value)]));
}
const loaded = draftNow();
const posted = form.dataset.draft !== undefined;
// Asked as the page is left (leave_guard.js); Discard leaves on purpose, as every submit does.
const leaveOnPurpose = askBeforeLeaving(() => posted || draftNow() !== loaded);
document.getElementById("discard")?.addEventListener("click", leaveOnPurpose);

// "Delete tenant…" opens its dialog by the browser's own invoker command
// (commandfor), script or not; a browser without those gets it from here.
// Escape and Cancel close it and the focus returns to the button, natively.
const deleteButton = document.getElementById("delete-tenant");
if (deleteButton && !("commandForElement" in deleteButton)) {
  const dialog = document.getElementById("delete-dialog");
  deleteButton.addEventListener("click", () => dialog.showModal());
}
// Confirming the deletion leaves the page on purpose, unsaved edits or not.
document.getElementById("delete-form")?.addEventListener("submit", (event) => {
  if (event.submitter?.getAttribute("formmethod") !== "dialog") leaveOnPurpose();
});
