"""The drill-down's Priority box in Chromium: a priority past 2**53 is filtered and named exactly.

A JavaScript Number holds integers exactly only up to 2**53; a priority is
any integer (a rule's is an int64), so one read as a Number came out
rounded, in the panel's title and in the filter the server listed by.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic, put_tenant

BIG = 2**53 + 1  # the first integer a Number cannot hold: it reads as 2**53
BIG_ID = 2**60 + 3  # a websocket client id a Number would read as 2**60 + 0


@pytest.fixture(scope="module", autouse=True)
def _huge_queued(server: DaphneProcess, traffic: Traffic) -> None:
    """Tenant huge, whose rule gives "urgent" queries priority BIG, with three requests queued:
    two urgent ones (the second with client id BIG_ID) and one at the default priority."""
    put_tenant(
        server,
        "huge",
        {
            "query_priority": {
                "enabled": True,
                "default_priority": 0,
                "priorities": [{"priority": BIG, "query_attributes": [{"regex": "urgent"}]}],
            }
        },
    )
    traffic.enqueue("huge", "urgent_query")
    traffic.enqueue("huge", "up")
    traffic.enqueue("huge", "urgent_again", id=BIG_ID)


def open_huge_drill(page: Page) -> None:
    """The inspector's drill-down on huge, listing its three requests."""
    page.goto("/")
    page.get_by_role("button", name="Requests of huge").click()
    expect(page.locator("#drill-rows > li")).to_have_count(3)


def test_a_priority_past_2_53_lists_its_requests_under_a_title_naming_it_exactly(
    page: Page,
) -> None:
    open_huge_drill(page)
    rows, title = page.locator("#drill-rows > li"), page.locator("#drill-title")
    page.locator("#drill-priority").fill(str(BIG))
    expect(title).to_have_text(f"Requests of tenant huge / priority {BIG}")
    expect(rows.locator(".q")).to_have_text(["urgent_query", "urgent_again"])


def test_a_20_digit_priority_past_int64_is_refused_naming_the_box(page: Page) -> None:
    # Cortex's priorities are int64: no request can have this one, so the
    # box is told so rather than answered with an empty list.
    open_huge_drill(page)
    page.locator("#drill-priority").fill("12345678901234567890")
    expect(page.locator("#drill-title")).to_have_text(
        "Requests of tenant huge / priority 12345678901234567890: nothing listed"
    )
    expect(page.locator("#drill-filter-error")).to_contain_text(
        "Priority: must fit a 64-bit integer"
    )
    expect(page.locator("#drill-rows > li")).to_have_count(0)


def test_a_row_shows_a_priority_and_a_client_id_past_2_53_exactly(page: Page) -> None:
    open_huge_drill(page)
    row = page.locator("#drill-rows > li").filter(has_text="urgent_again")
    expect(row.locator(".prio")).to_have_text(f"p{BIG}")
    expect(row).to_contain_text(f"id {BIG_ID}")


def test_a_running_request_at_a_priority_past_2_53_is_named_exactly(
    page: Page, traffic: Traffic
) -> None:
    page.goto("/")
    querier = traffic.querier("q-huge", workers=4, latency=lambda _: 30.0)
    try:
        busy = page.locator(".w-busy[data-request]").filter(has_text=f"/ p{BIG} ·")
        expect(busy).to_have_count(2)
        busy.first.click()
        expect(page.locator("#request-facts")).to_contain_text(f"{BIG} (")
        page.get_by_role("button", name="Close", exact=True).click()
    finally:
        traffic.close(querier)
