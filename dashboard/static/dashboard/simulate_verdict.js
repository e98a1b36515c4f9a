// The Simulate page's verdict, in the page's own words: one line per
// priority, the summary that counts them (and, for recent traffic, what was
// still queued when the window ended), and the tenants whose p99 wait
// rose. Written from each side's numbers (by_priority, worst_tenants),
// not from the answer's `verdicts` strings: those are the REST contract's
// ("0.012 s -> 0.340 s"), and here every wait reads as on the inspector
// (formatTiming: "12.3ms", "1.25s").

import { formatTiming, iso } from "./format.js";
import { instant, windowEnd } from "./simulate_time.js";

// A side with no requests dispatched at a priority (or of a tenant), as
// scheduler_core.whatif spells it in its own lines.
export const NONE = "no requests";
// How many tenants each side's `worst_tenants` lists at most (docs/api.md).
const WORST = 5;

const p99Text = (row) => (row ? formatTiming(row.p99) : NONE);

// One line per priority either side has requests at, highest first:
// { level, before, after, text, same }. Two sides that read the same are
// the same to the operator, whatever digits lie below what is shown.
function priorityLines(live, proposed) {
  const levels = [...new Set([...Object.keys(live.by_priority), ...Object.keys(proposed.by_priority)])]
    .sort((a, b) => Number(b) - Number(a));
  return levels.map((level) => {
    const before = p99Text(live.by_priority[level]);
    const after = p99Text(proposed.by_priority[level]);
    const same = before === after;
    const text = same
      ? `p99 for priority ${level}: ${before} in both (unchanged)`
      : `p99 for priority ${level}: ${before} live → ${after} proposed`;
    return { level, before, after, text, same };
  });
}

// "p99 changes at 2 of the 3 priorities <which>", said so it reads at any count.
function countLine(changed, n, which) {
  if (n === 0) return "No priority has requests in both configs.";
  if (changed === 0) return n === 1 ? `p99 stays as it is at the one priority ${which}.` : `p99 stays as it is at all ${n} priorities ${which}.`;
  if (changed === n) return n === 1 ? `p99 changes at the one priority ${which}.` : `p99 changes at all ${n} priorities ${which}.`;
  return `p99 changes at ${changed} of the ${n} priorities ${which}.`;
}

// The summary over those lines. Its count is of the priorities both sides
// have requests at (the only ones whose wait can be compared); a line only
// one side has is said apart, so count and list add up.
function summaryText(lines, refused) {
  const both = lines.filter((l) => l.before !== NONE && l.after !== NONE);
  const changed = both.filter((l) => !l.same).length;
  const onlyLive = lines.filter((l) => l.after === NONE).map((l) => l.level);
  const onlyProposed = lines.filter((l) => l.before === NONE).map((l) => l.level);
  let summary;
  if (onlyLive.length || onlyProposed.length) summary = countLine(changed, both.length, "both configs have requests at");
  else if (changed) summary = countLine(changed, both.length, "listed");
  else summary = "The proposed config leaves every priority's p99 as it is on this workload.";
  if (onlyLive.length) summary += ` Only the live config has requests at priority ${onlyLive.join(", ")}.`;
  if (onlyProposed.length) summary += ` Only the proposed one has requests at priority ${onlyProposed.join(", ")}.`;
  // Refused requests have no wait, so the priority lines cannot show them:
  // a change that ends (or causes) 429s must say so where the verdict is read.
  if (refused[0] !== refused[1]) {
    summary += ` Requests rejected (429 and rules): ${refused[0]} live → ${refused[1]} proposed.`;
  }
  return summary;
}

// The tenants among the proposed side's five worst whose p99 wait rose.
// Each side lists only its five worst: a tenant not among the live side's
// five waited at most as long as the fifth there (said "at most"), or, with
// fewer than five listed, had no request dispatched at all. A rise is
// claimed only where the numbers show one.
function tenantLines(live, proposed) {
  const before = new Map(live.worst_tenants.map((t) => [t.tenant, t.p99]));
  const full = live.worst_tenants.length >= WORST;
  const bound = full ? Math.min(...live.worst_tenants.map((t) => t.p99)) : null;
  const lines = [];
  for (const { tenant, p99 } of proposed.worst_tenants) {
    const after = formatTiming(p99);
    let was;
    if (before.has(tenant)) {
      if (!(p99 > before.get(tenant))) continue;
      was = formatTiming(before.get(tenant));
      if (was === after) continue; // rose below what the page shows
      was += " live";
    } else if (full) {
      if (!(p99 > bound) || formatTiming(bound) === after) continue;
      was = `at most ${formatTiming(bound)} live (not among its ${WORST} worst)`;
    } else {
      was = `${NONE} live`;
    }
    lines.push(`${iso(tenant)}: p99 ${was} → ${after} proposed`);
  }
  return lines;
}

// Requests still queued when a window of recent traffic ended, where the
// sides differ: their waits are not among the window's (only dispatches
// count, as the scheduler measures), so a class a config starves would
// otherwise read as served quickly. Scenarios drain to their end (null).
// The count is at the window's end, said with its instant: the columns'
// completed counts are after the drain that serves these requests.
function waitingText(answer) {
  const [before, after] = [answer.live.waiting_at_window_end, answer.proposed.waiting_at_window_end];
  if (!before || !after) return "";
  const count = (side, level) => side.by_priority[level] || 0;
  const parts = [...new Set([...Object.keys(before.by_priority), ...Object.keys(after.by_priority)])]
    .sort((a, b) => Number(b) - Number(a))
    .filter((level) => count(before, level) !== count(after, level))
    .map((level) => `priority ${level}: ${count(before, level)} live → ${count(after, level)} proposed`);
  if (!parts.length) return "";
  const end = windowEnd(answer);
  const when = end === null ? "when the window ended" : `at the window's end (${instant(end)}), before the drain`;
  return ` Still queued ${when}: ${parts.join("; ")}.`;
}

export function verdict(answer) {
  const lines = priorityLines(answer.live, answer.proposed);
  const refused = [answer.live.rejected.total, answer.proposed.rejected.total];
  return {
    lines,
    summary: summaryText(lines, refused) + waitingText(answer),
    tenants: tenantLines(answer.live, answer.proposed),
  };
}
