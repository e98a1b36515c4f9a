// The drill-down's regex highlighting, off the page's thread (regex_marks.js).
// The server runs the search as RE2, in time linear in the text; JavaScript's
// regexes backtrack, and one RE2 serves at once, as (a+)+$, can take
// JavaScript longer than anyone waits on a 160-character line. Here it
// stalls only this worker, which the page then stops.

self.onmessage = ({ data: { id, regex, text } }) => {
  const spans = [];
  try {
    for (const m of text.matchAll(new RegExp(regex, "g"))) {
      if (m[0]) spans.push([m.index, m.index + m[0].length]);
    }
  } catch {
    // A regex JavaScript cannot read (RE2 and JavaScript differ at the edges): no marks.
  }
  self.postMessage({ id, spans });
};
// Loaded: the page's watchdog times jobs from here, not the worker's start-up.
self.postMessage({ ready: true });
