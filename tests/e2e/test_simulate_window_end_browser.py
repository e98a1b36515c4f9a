"""Simulate's figures for recent traffic each say their instant, in Chromium.

A replay of recent traffic counts what was still queued at the window's
end, then runs on until both queues drained: the completed counts and the
queue chart run through that drain. Read without their instants, "87 still
queued" contradicted "all completed" and "0 queued at its last sample".
The answer is one the REST API gives (docs/api.md, "Simulate"), served to
the page in place of a run, so every figure is known.
"""

from __future__ import annotations

import json
import re
from typing import Any

from playwright.sync_api import Page, Route, expect

SIMULATE = re.compile(r"/api/v1/simulate/$")
WINDOW = 590.0  # ten minutes recorded less ten seconds, from a whole minute


def _wait(p99: float) -> dict[str, float | int]:
    return {"mean": p99 / 2, "p50": p99 / 2, "p99": p99, "max": p99 * 2, "count": 100}


def _side(waiting: dict[str, int], makespan: float, queued: list[int]) -> dict[str, Any]:
    grid = [round(i * 2.95, 3) for i in range(201)]  # the engine's 200 steps over the window
    t = grid + [round(WINDOW + 2.95 * (i + 1), 3) for i in range(int((makespan - WINDOW) // 2.95))]
    lengths = queued + [0] * (len(t) - len(queued))
    return {
        "by_priority": {"2": _wait(1.5), "1": _wait(30.0)},
        "by_component": {"ingester": _wait(0.2)},
        "worst_tenants": [{"tenant": "a", **_wait(30.0)}],
        "rejected": {
            "total": 0,
            "too_many_outstanding": 0,
            "by_rule": 0,
            "too_many_tenants": 0,
            "by_tenant": {},
        },
        "utilisation": {"ingester": 0.9},
        "reserved_idle_seconds": 0.0,
        "reserved_queriers": [],
        "requests": {"offered": 30304, "enqueued": 30304, "completed": 30304, "left_queued": 0},
        "waiting_at_window_end": {"total": sum(waiting.values()), "by_priority": waiting},
        "makespan_seconds": makespan,
        "series": {"t": [*t, makespan], "queue_length": [*lengths, 0]},
    }


def _answer(*, window: float, warmup: int) -> dict[str, Any]:
    # Live ends at 610.243 s, proposed at 595.859 s: each run drains on its own.
    live = _side({"2": 10, "1": 87}, 610.243, [0] * 150 + [97] * 51 + [60, 30, 10])
    proposed = _side({"2": 7}, 595.859, [0] * 150 + [12] * 50 + [7])
    return {
        "live": live,
        "proposed": proposed,
        "workload": {
            "kind": "recent",
            "window_seconds": window,
            "warmup_seconds": warmup,
            "duration_seconds": WINDOW,
            "requests": 30304,
            "queriers": 4,
            "workers": 16,
            "seed": 1,
            "elapsed_seconds": 1.25,
            "start_from": "proposal",
        },
        "verdicts": ["p99 for priority 2: 1.5 s -> 1.5 s"],
    }


def _run(page: Page, answer: dict[str, Any], window: str = "recent:900") -> None:
    def serve(route: Route) -> None:
        if route.request.method == "POST":
            route.fulfill(status=200, content_type="application/json", body=json.dumps(answer))
        else:
            route.continue_()

    page.goto("/simulate/")
    page.route(SIMULATE, serve)
    page.get_by_label("Traffic").select_option(window)
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-status")).to_have_text("Done in 1.25s.")


def test_a_backlog_at_the_windows_end_is_said_at_that_instant_and_completions_after_the_drain(
    page: Page,
) -> None:
    _run(page, _answer(window=WINDOW, warmup=0))
    expect(page.locator("#sim-verdict-summary")).to_contain_text(
        "Still queued at the window's end (9m50s), before the drain: "
        "priority 2: 10 live → 7 proposed; priority 1: 87 live → 0 proposed."
    )
    expect(page.locator("#col-proposed .help")).to_have_text(
        "30304 offered, 0 rejected over the outstanding limit (429), 0 by a rejection rule. "
        "At the window's end (9m50s): 7 still queued. By the end of the drain, 5.86s after "
        "the window (the last request done at 9m55s859ms): 30304 completed. "
        "Reserved queriers idle 0s (none reserved)."
    )
    expect(page.locator("#col-live .help")).to_contain_text(
        "At the window's end (9m50s): 97 still queued. By the end of the drain, 20s after "
        "the window (the last request done at 10m10s243ms): 30304 completed."
    )
    expect(page.locator("#chart-queue-summary")).to_have_text(
        "Live: peak 97 queued at 7m22s500ms; 97 queued at the window's end (9m50s); "
        "the last request done at 10m10s243ms, nothing left queued. "
        "Proposed: peak 12 queued at 7m22s500ms; 7 queued at the window's end (9m50s); "
        "the last request done at 9m55s859ms, nothing left queued. "
        "The dashed line is the window's end; after it the runs only drain their queues."
    )
    chart = page.locator("#chart-queue")
    assert chart.evaluate("(el) => el.windowEnd") == WINDOW
    # Both lines cover the same span: the proposed queue, drained at
    # 595.859 s, reads empty up to the live run's end, not cut short.
    t, live, proposed = chart.evaluate("(el) => el.plot.data")
    assert t[-1] == 610.243
    assert live[-1] == 0 and proposed[-1] == 0
    # After its end a run's queue stays as it was left: no gap there.
    assert None not in proposed[t.index(595.859) :]
    page.get_by_text("Queue length as a table").click()
    table = page.locator("#chart-queue-data table")
    expect(table.locator("tbody th", has_text="(window's end)")).to_have_text(
        "9m50s (window's end)"
    )
    # At the proposed run's end the live run, still draining, has no sample.
    end_row = table.locator("tbody tr", has=page.locator('th:text-is("9m55s859ms")'))
    expect(end_row.locator("td")).to_have_text(["–", "0 (last request done)"])


def test_a_window_shorter_than_asked_says_recording_began_within_it(page: Page) -> None:
    _run(page, _answer(window=WINDOW, warmup=0))
    expect(page.locator("#sim-workload-line")).to_have_text(
        "recent 9m50s (asked 15m; recorded only since the minute it starts at): 30304 "
        "requests, 4 queriers (16 workers), seed 1. No time before the window was recorded: "
        "both sides started from an empty queue."
    )


def test_a_window_from_the_whole_minute_before_says_why_it_is_longer_than_asked(
    page: Page,
) -> None:
    _run(page, _answer(window=340, warmup=60), window="recent:300")
    expect(page.locator("#sim-workload-line")).to_have_text(
        "recent 5m40s (asked 5m; windows start at a whole minute), replayed for 9m50s "
        "(repeated): 30304 requests, 4 queriers (16 workers), seed 1. Each side started from "
        "its own backlog of the 1m before the window, as if the proposal had been applied "
        "long ago."
    )
