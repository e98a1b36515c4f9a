// The Simulate page's way back to the page its proposal came from, the
// tenant editor or Settings (dashboard/views_simulate.py renders it with the
// draft carried here). The proposal as edited under Proposed since is what
// goes back instead: the tenant editor reads its block from its YAML field
// (JSON is YAML) and opens its form on it; Settings gets each box set to
// the proposal's value, or to the live one for a setting it no longer
// changes. So what was simulated is what can be saved. Changes that are not
// valid JSON, or that the page cannot hold (no block for the tenant, null:
// its override removed; a setting Settings has no box for), stop it at the
// Changes box: going back would drop them without a word.

import { iso } from "./format.js";

const back = document.getElementById("sim-back");
const box = document.getElementById("sim-proposed");
const error = document.getElementById("proposed-error");
const carried = JSON.parse(document.getElementById("sim-proposal").textContent);
const live = JSON.parse(document.getElementById("sim-live").textContent).settings;

function refuse(event, where, message) {
  event.preventDefault();
  error.textContent = `Nothing was taken back to ${where}: ${message}`;
  error.hidden = false;
  box.setAttribute("aria-invalid", "true");
  box.focus();
}

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function tenantBack(event, proposed) {
  const tenant = back.dataset.tenant;
  const block = proposed?.tenants?.[tenant];
  const came = carried.tenants[tenant];
  // A YAML text that was no block came as none: it goes back as typed, to fix there.
  if (block === undefined && came === undefined) return;
  if (!isObject(block)) {
    refuse(event, "the editor", `the changes hold no block for tenant ${iso(tenant)} (at tenants.${iso(tenant)}).`);
    return;
  }
  if (JSON.stringify(block) === JSON.stringify(came)) return; // the draft as it came
  back.elements.yaml.value = JSON.stringify(block, null, 2);
  back.elements.action.value = "view-form";
}

function settingsBack(event, proposed) {
  const settings = proposed?.settings ?? {};
  if (!isObject(settings)) {
    refuse(event, "Settings", "the changes' settings are no mapping of setting to value (at settings).");
    return;
  }
  // The form as it came: each box as typed there, a refused value included.
  if (JSON.stringify(settings) === JSON.stringify(carried.settings)) return;
  for (const [name, value] of Object.entries(settings)) {
    if (!(name in live) || !back.elements.namedItem(name)) {
      refuse(event, "Settings", `the settings form has no box for ${iso(name)} (at settings.${iso(name)}).`);
      return;
    }
    if (typeof value !== "string" && typeof value !== "number") {
      refuse(event, "Settings", `a settings box holds text or a number (at settings.${iso(name)}).`);
      return;
    }
  }
  for (const name of Object.keys(live)) {
    const field = back.elements.namedItem(name);
    if (field) field.value = String(name in settings ? settings[name] : live[name]);
  }
}

function goBack(event) {
  let proposed;
  try {
    proposed = JSON.parse(box.value.trim() || "{}");
  } catch (problem) {
    const where = back.dataset.settings === undefined ? "the editor" : "Settings";
    refuse(event, where, `the changes are not valid JSON (${problem.message}).`);
    return;
  }
  if (back.dataset.settings === undefined) tenantBack(event, proposed);
  else settingsBack(event, proposed);
}

if (back) back.addEventListener("submit", goBack);
