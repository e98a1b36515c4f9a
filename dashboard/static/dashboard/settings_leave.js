// Settings: leaving with unsaved settings asks first (leave_guard.js), as the
// tenant editor does. Without this script the page works as before, by
// full-page posts, and leaves without asking.
//
// Unsaved is measured against the settings that run, which each box carries
// (`data-running`, dashboard/settings_view.fields_context), not against what
// the page was loaded with: a page the server rendered from a post (Save's
// review, a refused Save, the draft back from Simulate) holds the draft, so
// it asks until every box is back at its running value, and typing the old
// value back counts as unchanged. Boxes are compared as the server reads
// them (settings_from_post strips the text). The change note is no setting.
//
// Every submit leaves on purpose: Save and its confirm save the draft, and
// Simulate takes it along (Simulate's way back posts it here again, so
// nothing is lost); so do the Discard links.

import { askBeforeLeaving } from "./leave_guard.js";

const form = document.querySelector("form.settings");
if (form) {
  const boxes = [...form.querySelectorAll("[data-running]")];
  const unsaved = () => boxes.some((box) => box.value.trim() !== box.dataset.running);
  const leaveOnPurpose = askBeforeLeaving(unsaved);
  form.addEventListener("submit", leaveOnPurpose);
  for (const link of document.querySelectorAll("a[data-discard]")) {
    link.addEventListener("click", leaveOnPurpose);
  }
}
