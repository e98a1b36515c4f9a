// Tenant editor: the Explain button asks the server about the rules as they
// stand in the form (saved or not) and shows the answer in place. Without
// this script the same button re-renders the whole page with the answer.

import "./yaml_view.js";

const form = document.getElementById("tenant-form");
const box = document.getElementById("explain");
const output = document.getElementById("explain-output");
const button = document.getElementById("explain-button");

async function explain(event) {
  const url = box.dataset.url;
  if (!url) return; // a tenant not created yet: fall back to the full-page post
  event.preventDefault();
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
    button.disabled = false;
  }
}

button.addEventListener("click", explain);
document.getElementById("explain_query").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) explain(e);
});

const firstError = document.querySelector('[aria-invalid="true"]');
if (firstError) firstError.focus();
