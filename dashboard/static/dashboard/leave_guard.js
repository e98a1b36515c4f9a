// Asking before a page with unsaved edits is left: the tenant editor
// (editor.js) and Settings (settings_leave.js) alike. The browser's own
// beforeunload dialog covers every way out at once (a nav link, Log out, the
// address bar, Back, closing the tab), where guards on each link would miss
// some; a link to a fragment of the same page leaves nothing and asks
// nothing.
//
// `unsaved()` is asked only as the page is being left, so it reads the
// fields as they are then, not input events (which some editors, and undo,
// do not send). The page says when it leaves on purpose (a submit that
// takes the draft along, a Discard link) with the function returned; that
// lasts until the page is shown again from the browser's page cache (Back
// from where the submit went), when the draft is on the page again and
// leaving it asks again.

export function askBeforeLeaving(unsaved) {
  let onPurpose = false;
  window.addEventListener("beforeunload", (event) => {
    if (!onPurpose && unsaved()) event.preventDefault();
  });
  window.addEventListener("pageshow", (event) => {
    if (event.persisted) onPurpose = false;
  });
  return () => {
    onPurpose = true;
  };
}
