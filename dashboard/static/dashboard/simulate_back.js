// The Simulate page's way back to the tenant editor its proposal came from
// (dashboard/views_simulate.py renders it with the draft carried here). The
// block edited under Proposed since is what goes back instead: the editor
// reads it from its YAML field (JSON is YAML) and opens its form on it, so
// what was simulated is what can be saved. Changes that are not valid JSON,
// or hold no block for the tenant (null: its override removed), stop it at
// the Changes box: going back would drop them without a word.

import { iso } from "./format.js";

const back = document.getElementById("sim-back");
const box = document.getElementById("sim-proposed");
const error = document.getElementById("proposed-error");
const carried = JSON.parse(document.getElementById("sim-proposal").textContent);

function refuse(message) {
  error.textContent = message;
  error.hidden = false;
  box.setAttribute("aria-invalid", "true");
  box.focus();
}

function goBack(event) {
  const tenant = back.dataset.tenant;
  let proposed;
  try {
    proposed = JSON.parse(box.value.trim() || "{}");
  } catch (problem) {
    event.preventDefault();
    refuse(`Nothing was taken back to the editor: the changes are not valid JSON (${problem.message}).`);
    return;
  }
  const block = proposed?.tenants?.[tenant];
  const came = carried.tenants[tenant];
  // A YAML text that was no block came as none: it goes back as typed, to fix there.
  if (block === undefined && came === undefined) return;
  if (block === null || typeof block !== "object" || Array.isArray(block)) {
    event.preventDefault();
    refuse(`Nothing was taken back to the editor: the changes hold no block for tenant ${iso(tenant)} (at tenants.${iso(tenant)}).`);
    return;
  }
  if (JSON.stringify(block) === JSON.stringify(came)) return; // the draft as it came
  back.elements.yaml.value = JSON.stringify(block, null, 2);
  back.elements.action.value = "view-form";
}

if (back) back.addEventListener("submit", goBack);
