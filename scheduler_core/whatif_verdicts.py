"""The what-if answer's `verdicts`: the two configs' results compared in lines of text.

One line per priority either side dispatched at, its p99 wait live and
proposed ("p99 for priority 3: 8.1 s -> 0.2 s", highest priority first).
Then, for a window of recent traffic, one line per priority whose count of
requests still queued when the window ended differs between the sides: a
config that starves a class dispatches few of its requests in the window,
and the p99 of those few would read as the class served quickly.

The lines are the REST contract's text (docs/api.md); the Simulate page
writes its own (dashboard/static/dashboard/simulate_verdict.js).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["verdicts"]


def _seconds(value: float) -> str:
    if value >= 10:
        return f"{value:.0f} s"
    if value >= 0.1:
        return f"{value:.1f} s"
    if value >= 0.001:
        return f"{value:.3f} s"
    return "0 s" if value == 0 else f"{value:.1e} s"


def verdicts(live: Mapping[str, Any], proposed: Mapping[str, Any]) -> list[str]:
    """The p99 line of each priority, then the window's end lines (see the module)."""
    levels = sorted({*live["by_priority"], *proposed["by_priority"]}, key=int, reverse=True)
    lines = []
    for level in levels:
        sides = []
        for result in (live, proposed):
            row = result["by_priority"].get(level)
            sides.append(_seconds(row["p99"]) if row else "no requests")
        lines.append(f"p99 for priority {level}: {sides[0]} -> {sides[1]}")
    return lines + _waiting_lines(live, proposed)


def _waiting_lines(live: Mapping[str, Any], proposed: Mapping[str, Any]) -> list[str]:
    ends = [result.get("waiting_at_window_end") for result in (live, proposed)]
    if ends[0] is None or ends[1] is None:
        return []  # a scenario: drained to its end, nothing left waiting
    before, after = ends[0]["by_priority"], ends[1]["by_priority"]
    lines = []
    for level in sorted({*before, *after}, key=int, reverse=True):
        counts = before.get(level, 0), after.get(level, 0)
        if counts[0] != counts[1]:
            lines.append(
                f"still queued at the window's end, priority {level}: {counts[0]} -> {counts[1]}"
            )
    return lines
