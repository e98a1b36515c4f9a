// The tenant editor's YAML view and its Save review.
//
// The YAML view is a <textarea name="yaml"> the server renders; this turns
// it into a CodeMirror 6 editor (bundled from the npm registry at setup into
// vendor/codemirror.js) with YAML highlighting, line numbers, search, undo
// and Tab to indent (Esc then Tab moves focus on). Every change is copied
// back into the textarea, so every button of the form posts the text as
// typed. Problems come from the server: those of the page load at once,
// then the live check (/yaml-check/) after each pause in typing, each at
// the line its field path names; Cortex limits not used here show as info.
// The banners above follow the same answers: the "Not used here" notice
// lists what the gutter marks, and the error summary, which counted the
// draft the page was rendered with, counts the text as it stands (and goes
// once it has no problem).
//
// A Save review (#review) describes one exact draft: any edit after it
// removes it and its token, so the next Save shows a fresh diff; Escape
// in it sets it aside.

import {
  EditorState,
  EditorView,
  basicSetup,
  indentWithTab,
  keymap,
  linter,
  lintGutter,
  setDiagnostics,
  yaml,
} from "./vendor/codemirror.js";

const form = document.getElementById("tenant-form");
const source = document.getElementById("yaml-source");
const problems = document.getElementById("yaml-problems");

function dropReview() {
  const review = document.getElementById("review");
  if (review) review.remove();
}

function lineRange(doc, line) {
  const n = Math.min(Math.max(1, line || 1), doc.lines);
  const { from, to } = doc.line(n);
  return { from, to };
}

function toDiagnostics(doc, answer) {
  const out = [];
  for (const e of answer.errors || []) {
    out.push({ ...lineRange(doc, e.line), severity: "error", message: `${e.path}: ${e.message}` });
  }
  for (const n of answer.ignored || []) {
    out.push({
      ...lineRange(doc, n.line),
      severity: "info",
      message: `${n.name}: not used here (a Cortex limit this scheduler ignores; not saved)`,
    });
  }
  return out;
}

function listProblems(view, errors) {
  problems.replaceChildren();
  for (const e of errors) {
    const item = document.createElement("li");
    item.className = "field-error";
    item.dataset.line = e.line ?? "";
    if (e.line) {
      const link = document.createElement("a");
      link.href = "#yaml-source";
      link.className = "goto";
      link.dataset.line = e.line;
      link.textContent = `line ${e.line}`;
      item.append(link, ": ");
    }
    const path = document.createElement("code");
    path.textContent = e.path;
    item.append(path, `: ${e.message}`);
    problems.append(item);
  }
}

const plural = (n, one, many) => (n === 1 ? one : many);

// The Cortex limits of the text the scheduler ignores, as the server words
// them on the page it renders (_editor_notices.html).
function showIgnored(ignored) {
  const notice = document.getElementById("unused-limits");
  if (!notice) return;
  notice.hidden = ignored.length === 0;
  if (!ignored.length) return;
  const n = ignored.length;
  const said = [
    `the scheduler ignores ${n} Cortex limit${plural(n, "", "s")} of the pasted block, ` +
      `so ${plural(n, "it is", "they are")} not saved: `,
  ];
  ignored.forEach((limit, i) => {
    const name = document.createElement("code");
    name.textContent = limit.name;
    said.push(name, limit.line ? ` (line ${limit.line})` : "", i < n - 1 ? ", " : ".");
  });
  notice.querySelector("span").replaceChildren(...said);
}

// The summary said "Nothing was saved: 3 problems" of the draft the page
// was rendered with; once the count of the text as it stands differs, it
// says that count (no save was tried on this text), and goes at none.
// The tenant ID's problems are not the check's to see: they stay counted.
function summarise(errors) {
  const summary = document.getElementById("error-summary");
  if (!summary) return;
  const n = errors + Number(summary.dataset.beside);
  if (String(n) === summary.dataset.count) return; // as it says: left as worded
  summary.dataset.count = String(n);
  summary.hidden = n === 0;
  summary.querySelector("strong").textContent = `This draft has ${n} problem${plural(n, "", "s")}.`;
  summary.querySelector("span").textContent = `${plural(n, "It is", "Each is")} shown at its line.`;
}

function goTo(view, line) {
  const { from } = lineRange(view.state.doc, line);
  view.dispatch({ selection: { anchor: from }, scrollIntoView: true });
  view.focus();
}

async function check(view) {
  const data = new FormData();
  data.set("yaml", view.state.doc.toString());
  const token = form.querySelector('[name="csrfmiddlewaretoken"]').value;
  let answer;
  try {
    const response = await fetch(source.dataset.checkUrl, {
      method: "POST",
      body: data,
      headers: { "X-CSRFToken": token },
      credentials: "same-origin",
    });
    if (!response.ok) return [];
    answer = await response.json();
  } catch (error) {
    return []; // the server is away: keep typing, Save will say
  }
  listProblems(view, answer.errors || []);
  showIgnored(answer.ignored || []);
  summarise((answer.errors || []).length);
  return toDiagnostics(view.state.doc, answer);
}

function start() {
  const readOnly = source.hasAttribute("readonly");
  const view = new EditorView({
    state: EditorState.create({
      doc: source.value,
      extensions: [
        basicSetup,
        keymap.of([indentWithTab]),
        yaml(),
        lintGutter(),
        linter(check, { delay: 400 }),
        EditorState.readOnly.of(readOnly),
        EditorView.contentAttributes.of({
          "aria-labelledby": "yaml-label",
          "aria-describedby": "yaml-help",
        }),
        EditorView.updateListener.of((update) => {
          if (!update.docChanged) return;
          source.value = update.state.doc.toString();
          dropReview();
        }),
      ],
    }),
  });
  view.dom.id = "yaml-editor";
  source.hidden = true;
  source.after(view.dom);
  const initial = JSON.parse(document.getElementById("yaml-diagnostics").textContent);
  view.dispatch(setDiagnostics(view.state, toDiagnostics(view.state.doc, { errors: initial })));
  problems.addEventListener("click", (event) => {
    const link = event.target.closest("a.goto");
    if (!link) return;
    event.preventDefault();
    goTo(view, Number(link.dataset.line));
  });
  const first = initial.find((e) => e.line);
  if (first && !document.getElementById("review")) goTo(view, first.line);
  return view;
}

export const yamlView = source ? start() : null;

// Edits in the form view (inputs inside the form itself, not the explain box).
// The change note is not part of the draft.
function edited(event) {
  if (event.target.name !== "message") dropReview();
}
form.addEventListener("input", edited);
form.addEventListener("change", edited);

// Escape in the review (its Confirm button holds the focus) sets it aside
// as "Keep editing" does, without a round trip, and puts the focus on Save.
form.addEventListener("keydown", (event) => {
  const review = document.getElementById("review");
  if (event.key !== "Escape" || !review || !review.contains(event.target)) return;
  event.preventDefault();
  dropReview();
  document.getElementById("save").focus();
});
