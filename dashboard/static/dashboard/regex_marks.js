// Where an RE2 regex typed in the drill-down matches a text, for its <mark>s,
// found by regex_worker.js (which says why not here). Jobs go to the worker
// in order; while any is pending it must answer one within BUDGET_MS. One
// that does not is stuck in a regex: it is stopped, every pending job gets
// no marks, and the regex it was running is not tried again. The budget
// runs from the worker's "ready": timed from its start, a busy browser's
// slow start-up once put an ordinary regex on the never-again list.

const BUDGET_MS = 250;
const WORKER_URL = new URL("./regex_worker.js", import.meta.url);

let worker = null;
let ready = false;
let nextId = 1;
const pending = new Map(); // id -> { regex, resolve }, in the order sent
const tooSlow = new Set();
let watchdog = null;

function restartWatchdog() {
  clearTimeout(watchdog);
  watchdog = pending.size && ready ? setTimeout(giveUp, BUDGET_MS) : null;
}

function giveUp() {
  const [first] = pending.values();
  if (first) tooSlow.add(first.regex);
  stop();
}

// Every pending job gets no marks; the next job starts a new worker.
function stop() {
  worker.terminate();
  worker = null;
  ready = false;
  for (const job of pending.values()) job.resolve(null);
  pending.clear();
  restartWatchdog();
}

function started() {
  if (worker) return worker;
  worker = new Worker(WORKER_URL);
  worker.onerror = stop; // it could not load: no marks, but no job left waiting
  worker.onmessage = ({ data: { ready: loaded, id, spans } }) => {
    if (loaded) {
      ready = true;
      restartWatchdog();
      return;
    }
    const job = pending.get(id);
    if (!job) return;
    pending.delete(id);
    job.resolve(spans);
    restartWatchdog();
  };
  return worker;
}

// [[start, end], ...] of the matches of `regex` in `text`; null when the
// regex took too long (here or before).
export function regexSpans(regex, text) {
  if (tooSlow.has(regex)) return Promise.resolve(null);
  return new Promise((resolve) => {
    const id = nextId++;
    pending.set(id, { regex, resolve });
    started().postMessage({ id, regex, text });
    if (pending.size === 1) restartWatchdog();
  });
}
