// Time on the Simulate page, in the inspector's notation (format.js): a
// simulated instant, and where the window of recent traffic ended.

import { spellDuration } from "./format.js";

// An instant of simulated time as the server rounded it (to the
// millisecond), with no more digits than it has: the grid's whole seconds
// read "12s", a run's end "9m55s859ms", each instant its own text (the
// queue table is looked up by it).
export function instant(t) {
  const resolution = [1, 0.1, 0.01].find((r) => Math.abs(Math.round(t / r) * r - t) < 1e-9) ?? 0.001;
  return spellDuration(t, resolution);
}

// Where a window of recent traffic ended, in the results' simulated time
// (which starts at the window's start: the warm-up before it is not
// shown), or null: a scenario, drained to its end, has no window's end
// (its `waiting_at_window_end` is null). The run replays the window for
// the workload's `duration_seconds`; requests still queued then are served
// after it, in the drain, which the columns' completed counts and the
// queue chart run on through.
export function windowEnd(answer) {
  if (!answer.live.waiting_at_window_end) return null;
  const end = answer.workload.duration_seconds;
  return typeof end === "number" ? end : null;
}
