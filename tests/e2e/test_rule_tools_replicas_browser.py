"""Rule counts and Simulate's recent traffic on a scaled-out service, in Chromium.

The answers are ones the REST API could give (docs/api.md, "Rule hit
statistics" and "Simulate"): the server's own rule-stats body for the
tenant with the replica fields set as a scaled-out service's would be, and
a Simulate answer served in place of a run. A lone replica's says nothing
of replicas.
"""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, Route, expect

from tests.e2e.test_operator_pages_a11y_browser import CONTRAST
from tests.e2e.test_simulate_verdict_browser import _answer, _run, _side

STATS = re.compile(r"/api/v1/tenants/acme/rule-stats/$")
COUNTS = {"5m": 7, "1h": 70, "version": 700}
SCALED: dict[str, Any] = {
    "replicas": [
        {
            "replica": "web-1",
            "current": True,
            "counting_seconds": 1834.5,
            "total": {"5m": 5, "1h": 50, "version": 500},
        },
        {
            "replica": "web-2",
            "current": True,
            "counting_seconds": 90.0,
            "total": {"5m": 2, "1h": 20, "version": 1200},
        },
        {
            "replica": "web-4",
            "current": False,
            "counting_seconds": None,
            "total": {"5m": 1, "1h": 1, "version": 1},
        },
    ],
    "replicas_missing": ["web-3"],
}
LONE: dict[str, Any] = {
    "replicas": [
        {"replica": "web-1", "current": True, "counting_seconds": 1834.5, "total": COUNTS}
    ],
    "replicas_missing": [],
}
NOT_COUNTED = (
    "Not counted: web-3 (its counts are not in: not answering, or not read yet). "
    "The counts on this page leave its requests out."
)


def _no_page_scroll(page: Page) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


def test_partial_rule_counts_say_whose_are_missing_and_open_a_breakdown_by_replica(
    page: Page,
) -> None:
    scope: dict[str, Any] = dict(SCALED)

    def serve(route: Route) -> None:
        # The server's own body for acme's rules, as a scaled-out service's:
        # 70 requests in the hour, all to the default, one replica not counted.
        body = route.fetch().json()
        body["total"] = body["default"]["matched"] = COUNTS
        body["counting_seconds"] = 1834.5
        body.pop("replicas_note", None)
        body.update(scope)
        route.fulfill(json=body)

    page.set_viewport_size({"width": 1280, "height": 900})
    page.route(STATS, serve)
    page.goto("/tenants/acme/")
    default = page.locator('[data-hits="default"]')
    expect(default).to_have_text(
        "took in the last 5 min: 7 · last hour: 70 · since this version: 700 "
        "(over the 31 min counted so far); not counted: web-3"
    )
    expect(page.locator('[data-hits="rule-0"]')).to_have_text(
        "matched nothing in the 31 min since this version, of 70 requests; not counted: web-3"
    )
    expect(page.locator('[data-hits="not-counted"]')).to_have_text(NOT_COUNTED)

    # The breakdown opens from the keyboard, and stays open (and focused)
    # across the polls that update it.
    summary = page.locator('[data-hits="by-replica"] summary')
    expect(summary).to_have_text("Counts by replica (4)")
    table = page.locator('[data-hits="by-replica"] table')
    expect(table).to_be_hidden()
    summary.focus()
    page.keyboard.press("Enter")
    expect(table.locator("tbody tr")).to_have_text(
        [
            re.compile(r"^web-1\s*5\s*50\s*500\s*31 min$"),
            re.compile(r"^web-2\s*2\s*20\s*1,200\s*90 s$"),
            re.compile(r"^web-4\s*1\s*1\s*1\s*on an earlier version: not in the sums$"),
            re.compile(r"^web-3\s*–\s*–\s*–\s*not counted$"),
        ]
    )
    web_2 = {**SCALED["replicas"][1], "total": {"5m": 3, "1h": 21, "version": 1201}}
    scope["replicas"] = [SCALED["replicas"][0], web_2, SCALED["replicas"][2]]
    expect(table.locator("tbody tr").nth(1)).to_have_text(
        re.compile(r"^web-2\s*3\s*21\s*1,201\s*90 s$"), timeout=10_000
    )
    expect(page.locator('[data-hits="by-replica"]')).to_have_attribute("open", "")
    expect(summary).to_be_focused()
    for part in ('[data-hits="not-counted"]', '[data-hits="by-replica"] th'):
        ratio = page.locator(part).first.evaluate(CONTRAST)
        assert ratio >= 4.5, f"{part}: {ratio:.2f}:1"
    page.set_viewport_size({"width": 400, "height": 900})
    expect(table).to_be_visible()
    assert _no_page_scroll(page)

    # Redis unread: this replica's counts only, said beside each count.
    scope.update(replicas=LONE["replicas"], replicas_missing=[])
    scope["replicas_note"] = "the peer replicas' counts could not be read: this replica's only"
    expect(page.locator('[data-hits="not-counted"]')).to_have_text(
        "Partial counts: the peer replicas' counts could not be read: this replica's only.",
        timeout=10_000,
    )
    expect(default).to_have_text(re.compile(r"; this replica's counts only$"))
    expect(page.locator('[data-hits="by-replica"]')).to_be_hidden()

    # A lone replica: every peer counted, nothing said of replicas.
    del scope["replicas_note"]
    expect(page.locator('[data-hits="replicas"]')).to_be_hidden(timeout=10_000)
    expect(default).to_have_text(
        "took in the last 5 min: 7 · last hour: 70 · since this version: 700 "
        "(over the 31 min counted so far)"
    )
    page.set_viewport_size({"width": 1280, "height": 900})


def _recent(others: list[str]) -> dict[str, Any]:
    answer = _answer(_side({"0": 0.1}, [("a", 0.1)], 0), _side({"0": 0.1}, [("a", 0.1)], 0))
    answer["workload"] = {
        "kind": "recent",
        "window_seconds": 900,
        "requests": 50,
        "queriers": 4,
        "workers": 16,
        "seed": 1,
        "elapsed_seconds": 0.5,
        "replica": "web-1",
        "other_replicas": others,
    }
    return answer


def test_simulate_names_whose_recent_traffic_it_replayed_and_whose_it_lacks(page: Page) -> None:
    _run(page, _recent(["web-2", "web-3"]))
    expect(page.locator("#sim-workload-line")).to_have_text(
        "recent 15m (asked 15m; windows start at a whole minute): 50 requests, 4 queriers "
        "(16 workers), seed 1. Replica web-1's traffic "
        "only: the traffic replicas web-2, web-3 received is not in it."
    )
    page.unroute("**/*")
    _run(page, _recent([]))
    expect(page.locator("#sim-workload-line")).to_have_text(
        "recent 15m (asked 15m; windows start at a whole minute): 50 requests, 4 queriers "
        "(16 workers), seed 1."
    )
