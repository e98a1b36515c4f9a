"""Simulate's verdict as the operator reads it, in Chromium.

The answer is one the REST API could give (docs/api.md, "Simulate"), served
to the page in place of a run so every wording case is met exactly: waits
as the rest of the pages write them, a count that agrees with the list
under it, and the tenants whose p99 wait rose.
"""

from __future__ import annotations

import json
import re
from typing import Any

from playwright.sync_api import Page, Route, expect

SIMULATE = re.compile(r"/api/v1/simulate/$")


def _wait(p99: float) -> dict[str, float | int]:
    return {"mean": p99 / 2, "p50": p99 / 2, "p99": p99, "max": p99 * 1.5, "count": 10}


def _side(by_priority: dict[str, float], worst: list[tuple[str, float]], rejected: int) -> Any:
    return {
        "by_priority": {p: _wait(v) for p, v in by_priority.items()},
        "by_component": {"ingester": _wait(0.2)},
        "worst_tenants": [{"tenant": t, **_wait(v)} for t, v in worst],
        "rejected": {
            "total": rejected,
            "too_many_outstanding": rejected,
            "by_rule": 0,
            "too_many_tenants": 0,
            "by_tenant": {"a": rejected} if rejected else {},
        },
        "utilisation": {"ingester": 0.5},
        "reserved_idle_seconds": 0.0042,
        "reserved_queriers": [],
        "requests": {"offered": 50, "enqueued": 50, "completed": 50, "left_queued": 0},
        "makespan_seconds": 61.734,
        "series": {"t": [0, 5, 10], "queue_length": [0, 3, 1]},
    }


def _answer(live: Any, proposed: Any) -> dict[str, Any]:
    return {
        "live": live,
        "proposed": proposed,
        "workload": {
            "kind": "scenario",
            "name": "cortex-seed",
            "requests": 50,
            "queriers": 4,
            "workers": 16,
            "seed": 1,
            "elapsed_seconds": 0.5,
            "config": {},
        },
        # The contract's own lines: the page writes its own from the numbers.
        "verdicts": ["p99 for priority 5: 0.340 s -> 0.500 s"],
    }


def _run(page: Page, answer: dict[str, Any]) -> None:
    def serve(route: Route) -> None:
        if route.request.method == "POST":
            route.fulfill(status=200, content_type="application/json", body=json.dumps(answer))
        else:
            route.continue_()

    page.goto("/simulate/")
    page.route(SIMULATE, serve)
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-status")).to_contain_text("Done in")


FULL_LIVE = [("a", 2.0), ("b", 1.0), ("c", 0.5), ("d", 0.2), ("e", 0.1)]


def test_the_verdict_reads_in_words_and_units_and_counts_what_it_lists(page: Page) -> None:
    live = _side({"9": 0.0123, "5": 0.34, "3": 1.234, "0": 2.0}, FULL_LIVE, 2)
    proposed = _side(
        {"9": 0.0123, "5": 0.5, "3": 1.234, "1": 0.002},
        [("f", 3.0), ("a", 2.5), ("b", 1.0), ("c", 0.4), ("g", 0.05)],
        40,
    )
    _run(page, _answer(live, proposed))
    expect(page.locator("#sim-verdicts li")).to_have_text(
        [
            "p99 for priority 9: 12.3ms in both (unchanged)",
            "p99 for priority 5: 340ms live → 500ms proposed",
            "p99 for priority 3: 1.23s in both (unchanged)",
            "p99 for priority 1: no requests live → 2.00ms proposed",
            "p99 for priority 0: 2.00s live → no requests proposed",
        ]
    )
    # Five lines: the three both sides have, counted, and the two each has alone, named.
    expect(page.locator("#sim-verdict-summary")).to_have_text(
        "p99 changes at 1 of the 3 priorities both configs have requests at. "
        "Only the live config has requests at priority 0. "
        "Only the proposed one has requests at priority 1. "
        "Requests rejected (429 and rules): 2 live → 40 proposed."
    )
    # f was not among the live side's five worst: at most the fifth's wait there.
    # b stayed, c and g fell or stayed below: not listed.
    expect(page.locator("#sim-tenant-verdicts li")).to_have_text(
        [
            "f: p99 at most 100ms live (not among its 5 worst) → 3.00s proposed",
            "a: p99 2.00s live → 2.50s proposed",
        ]
    )
    expect(page.locator("#sim-tenants")).to_be_visible()
    shown = page.locator("#sim-results").inner_text()
    assert "->" not in shown
    assert not re.search(r"\d\.\d{3,}m?s\b", page.locator("#sim-verdicts").inner_text())
    expect(page.locator("#col-live")).to_contain_text("Reserved queriers idle 4.20ms")


def test_a_class_the_proposal_starves_is_said_beside_its_few_quick_waits(page: Page) -> None:
    """Recent traffic counts the window's dispatches: a starved class's p99 alone looks better."""
    live = _side({"1": 30.0}, [("a", 30.0)], 0)
    proposed = _side({"1": 0.5}, [("a", 0.5)], 0)
    live["waiting_at_window_end"] = {"total": 7, "by_priority": {"1": 2, "0": 5}}
    proposed["waiting_at_window_end"] = {"total": 145, "by_priority": {"1": 140, "0": 5}}
    _run(page, _answer(live, proposed))
    expect(page.locator("#sim-verdict-summary")).to_contain_text(
        "Still queued when the window ended: priority 1: 2 live → 140 proposed."
    )


def test_a_tenant_the_live_side_never_dispatched_reads_as_no_requests(page: Page) -> None:
    live = _side({"0": 0.1}, [("a", 0.1)], 0)
    proposed = _side({"0": 0.1}, [("z", 0.75), ("a", 0.1)], 0)
    _run(page, _answer(live, proposed))
    expect(page.locator("#sim-verdict-summary")).to_have_text(
        "The proposed config leaves every priority's p99 as it is on this workload."
    )
    expect(page.locator("#sim-tenant-verdicts li")).to_have_text(
        ["z: p99 no requests live → 750ms proposed"]
    )


def test_a_priority_only_one_side_has_is_named_beside_a_count_of_none(page: Page) -> None:
    live = _side({"5": 0.2, "0": 0.1}, [("a", 0.3)], 0)
    proposed = _side({"0": 0.1}, [("a", 0.3)], 0)
    _run(page, _answer(live, proposed))
    expect(page.locator("#sim-verdicts li")).to_have_count(2)
    expect(page.locator("#sim-verdict-summary")).to_have_text(
        "p99 stays as it is at the one priority both configs have requests at. "
        "Only the live config has requests at priority 5."
    )


def test_no_tenant_line_shows_when_no_tenant_s_wait_rose(page: Page) -> None:
    live = _side({"0": 0.1}, [("a", 0.3)], 0)
    proposed = _side({"0": 0.05}, [("a", 0.2)], 0)
    _run(page, _answer(live, proposed))
    expect(page.locator("#sim-verdict-summary")).to_have_text(
        "p99 changes at the one priority listed."
    )
    expect(page.locator("#sim-tenants")).to_be_hidden()
