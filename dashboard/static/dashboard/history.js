// History's From and To picks ride in the page's URL (from=, to=: revision
// ids), so a revision picked on one page is still picked after paging,
// filtering or switching the diff layout. The server renders the picks the
// URL names; a pick made here goes into the URL, the pager and layout links
// and the filter form at once, without a round trip. Compare with a pick
// missing is refused here, at its button, as the server does without this
// script (the page carries the server's words for it).

const form = document.getElementById("compare-form");
const NAMES = ["from", "to"];

function radioPicked(name) {
  return document.querySelector(`input[type="radio"][name="${name}"][form="compare-form"]:checked`);
}

// A pick made on another page rides in the form as a hidden input.
function carried(name) {
  return form.querySelector(`input[type="hidden"][name="${name}"]`);
}

function pick(name) {
  const input = radioPicked(name) || carried(name);
  return input ? { id: input.value, label: input.dataset.label } : null;
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
  document.addEventListener("change", (event) => {
    const input = event.target;
    if (input.type !== "radio" || input.form !== form || !NAMES.includes(input.name)) return;
    // Picked here: a pick carried from another page gives way.
    carried(input.name)?.remove();
    problem.textContent = "";
    showPicks();
  });
  form.addEventListener("submit", (event) => {
    const picks = showPicks();
    const missing = NAMES.filter((name) => !picks[name]);
    if (!missing.length) return;
    event.preventDefault();
    const which = missing.length === 2 ? "missingBoth" : { from: "missingFrom", to: "missingTo" }[missing[0]];
    problem.textContent = problem.dataset[which];
  });
}
