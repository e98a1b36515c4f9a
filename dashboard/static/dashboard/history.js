// History's From and To picks ride in the page's URL (from=, to=: revision
// ids), so a revision picked on one page is still picked after paging,
// filtering or switching the diff layout. The server renders the picks the
// URL names, in the Compare form's hidden inputs and as each row's pressed
// From / To button. A press here (click, Enter or Space) toggles that pick in
// the form, the buttons, the URL, the pager and layout links and the filter
// form at once, without a round trip; without this script the button submits
// the form and the server does the same. Buttons, not a radio group: moving
// through the list with the keyboard must pick nothing. Compare with a pick
// missing is refused here, at its button, as the server does without this
// script (the page carries the server's words for it).

const form = document.getElementById("compare-form");
const NAMES = ["from", "to"];

// The pick as the form holds it: a hidden input, disabled when none.
function held(name) {
  return form.querySelector(`input[type="hidden"][name="${name}"]`);
}

function pick(name) {
  const input = held(name);
  return input.disabled || !input.value ? null : { id: input.value, label: input.dataset.label };
}

function withPicks(href, picks) {
  const url = new URL(href, location.href);
  for (const name of NAMES) {
    if (picks[name]) url.searchParams.set(name, picks[name].id);
    else url.searchParams.delete(name);
  }
  url.searchParams.delete("compare");
  return url.href;
}

// Sets (or, with null, drops) one pick and shows it on every row's buttons.
function setPick(name, chosen) {
  const input = held(name);
  input.value = chosen ? chosen.id : "";
  input.dataset.label = chosen ? chosen.label : "";
  input.disabled = !chosen;
  for (const button of document.querySelectorAll(`button.pick[name="${name}"]`)) {
    const on = chosen !== null && button.dataset.id === chosen.id;
    button.setAttribute("aria-pressed", String(on));
    // What the button would submit without this script: pressed, it unpicks.
    button.value = on ? "" : button.dataset.id;
  }
}

function showPicks() {
  const picks = Object.fromEntries(NAMES.map((name) => [name, pick(name)]));
  history.replaceState(history.state, "", withPicks(location.href, picks));
  for (const link of document.querySelectorAll(".pager a, .diff-mode a")) {
    link.href = withPicks(link.href, picks);
  }
  for (const name of NAMES) {
    const shown = document.querySelector(`#compare-picked [data-pick="${name}"]`);
    shown.textContent = picks[name] ? picks[name].label : "none";
    const kept = document.querySelector(`.history-filter input[data-pick="${name}"]`);
    kept.value = picks[name] ? picks[name].id : "";
  }
  document.getElementById("clear-picks").hidden = !picks.from && !picks.to;
  return picks;
}

if (form) {
  const problem = document.getElementById("compare-problem");
  form.addEventListener("submit", (event) => {
    const button = event.submitter;
    if (button?.classList.contains("pick")) {
      event.preventDefault();
      const pressed = button.getAttribute("aria-pressed") === "true";
      setPick(button.name, pressed ? null : { id: button.dataset.id, label: button.dataset.label });
      problem.textContent = "";
      showPicks();
      return;
    }
    const picks = showPicks();
    const missing = NAMES.filter((name) => !picks[name]);
    if (!missing.length) return;
    event.preventDefault();
    const which = missing.length === 2 ? "missingBoth" : { from: "missingFrom", to: "missingTo" }[missing[0]];
    problem.textContent = problem.dataset[which];
  });
}
