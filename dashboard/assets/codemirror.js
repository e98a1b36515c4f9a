// The code editor of the tenant editor's YAML view (CodeMirror 6), as one module.
export { EditorView, keymap } from "@codemirror/view";
export { EditorState } from "@codemirror/state";
export { basicSetup } from "codemirror";
export { indentWithTab } from "@codemirror/commands";
export { yaml } from "@codemirror/lang-yaml";
export { linter, lintGutter, setDiagnostics, forceLinting } from "@codemirror/lint";
