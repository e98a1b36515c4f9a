// "Proposed starts from", kept in step with the recent window picked: it
// chooses between two backlogs built over the time recorded before the
// window, and with none recorded (a replica younger than the window and a
// minute) both sides start from an empty queue whichever is picked. The
// page says so before a run, with the choice disabled, and enables it when
// time before the window has been recorded: each window's option carries
// how long after the page was drawn that is (data-warmup-in, from the
// recorder, dashboard/views_simulate.py; absent: not known here, so the
// choice stays offered and the result says what was run).

import { formatWait } from "./format.js";

const drawn = performance.now();
const select = document.getElementById("sim-start-from");
const note = document.getElementById("start-from-none");
let ticking = null;

// Seconds until the picked window has a warm-up (0: it has), or null: unknown.
function wait(option) {
  if (!option || option.dataset.warmupIn === undefined) return null;
  return Math.max(0, Number(option.dataset.warmupIn) - (performance.now() - drawn) / 1000);
}

function show(option) {
  const left = wait(option);
  const none = left !== null && left > 0;
  select.disabled = none;
  note.hidden = !none;
  // Emptied when hidden: the select's description names it, and a hidden
  // element's text is still read there.
  note.textContent = none
    ? "Nothing was recorded before this window yet: both sides start from an empty queue, " +
      `whichever is picked. Time before it will have been recorded in ${formatWait(Math.ceil(left))}.`
    : "";
  return none;
}

// Called with the workload's option each time it changes; a window still
// without a warm-up is looked at again each second, so the countdown and
// the choice follow the clock.
export function startFromFor(option) {
  clearInterval(ticking);
  ticking = null;
  if (show(option)) {
    ticking = setInterval(() => {
      if (!show(option)) {
        clearInterval(ticking);
        ticking = null;
      }
    }, 1000);
  }
}
