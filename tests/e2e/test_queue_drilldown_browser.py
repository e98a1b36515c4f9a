"""The drill-down in Chromium: requests listed in dequeue order, expanded, searched, filtered.

A real Daphne and real websocket frontends and queriers (tests/e2e/conftest.py).
The module queues acme's four requests once (tests/e2e/drill_pages.py); the
tests read them, each opening the drill-down itself. Cancelling is
test_drill_cancel_browser.py, the oldest request and re-queues
test_drill_oldest_browser.py, queriers and who serves a tenant
test_drill_queriers_browser.py, the link to explain test_drill_explain_browser.py.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import Traffic, full_page_screenshot
from tests.e2e.drill_pages import (  # noqa: F401 - queue_acme is the fixture acme_queued
    no_horizontal_scroll,
    open_drill,
    queue_acme,
    treeitem,
)

pytestmark = pytest.mark.usefixtures("acme_queued")


def test_drilling_down_from_a_tenant_lists_its_requests_in_dequeue_order(page: Page) -> None:
    page.goto("/")
    expect(treeitem(page, "acme: 4 queued")).to_be_visible()
    page.get_by_role("button", name="Requests of acme").click()
    panel = page.locator("#drill")
    expect(panel).to_be_visible()
    expect(page.locator("#drill-title")).to_have_text("Requests of tenant acme")
    rows = page.locator("#drill-rows > li")
    expect(rows).to_have_count(4)
    expect(page.locator("#drill-count")).to_have_text("4 of 4")
    # One leaf, one priority: FIFO, as the queue will serve it.
    expect(rows.nth(0).locator(".q")).to_have_text("rate(http_requests_total[1m])")
    expect(rows.nth(2).locator(".q")).to_have_text(
        "sum by (job) (rate(needle_seconds_total[5m])) …"
    )
    expect(rows.nth(2).locator(".meta")).to_contain_text("acme / ingester")
    expect(rows.nth(2).locator(".meta")).to_contain_text("websocket")
    # Not yet handed to a querier is every queued request's lot: no "attempts 0".
    expect(rows.nth(2).locator(".meta")).not_to_contain_text("attempt")
    # One replica: every row is its own, so no row names it.
    expect(rows.nth(2).locator(".meta")).not_to_contain_text("replica")
    # Any querier may serve acme (no shard, no reservation): nothing to say.
    expect(page.locator("#drill-serving")).to_be_hidden()


def test_the_panel_opens_with_its_rows_in_view_and_closing_returns_to_its_button(
    page: Page,
) -> None:
    open_drill(page, "acme")
    opener = page.get_by_role("button", name="Requests of acme", exact=True)
    page.locator("#drill-close").click()
    expect(opener).to_be_focused()
    page.evaluate("window.scrollTo(0, 0)")
    opener.click()
    rows = page.locator("#drill-rows > li")
    expect(rows).to_have_count(4)
    # The panel is the last card on the page: its rows, not just its head, come into view.
    expect(rows.first).to_be_in_viewport(ratio=1)
    expect(rows.last).to_be_in_viewport(ratio=1)


def test_title_and_note_say_which_requests_are_listed(page: Page) -> None:
    open_drill(page, "acme")
    title, note = page.locator("#drill-title"), page.locator("#drill-note")
    expect(note).to_contain_text("then running ones")
    page.locator("#drill-state").select_option("queued")
    expect(title).to_have_text("Queued requests of tenant acme")
    expect(note).to_have_text("Queued requests in the order the scheduler will dequeue them.")
    page.locator("#drill-min-wait").fill("2")
    page.locator("#drill-search").fill("rate")
    expect(title).to_have_text(
        "Queued requests of tenant acme whose query contains “rate”, waited ≥ 2s"
    )
    page.locator("#drill-state").select_option("in_flight")
    expect(title).to_have_text(
        "Running requests of tenant acme whose query contains “rate”, waited ≥ 2s"
    )
    expect(note).to_have_text("Running requests, longest running first.")
    page.locator("#drill-state").select_option("")
    page.locator("#drill-min-wait").fill("")
    page.locator("#drill-search").fill("")
    expect(title).to_have_text("Requests of tenant acme")
    expect(page.locator("#drill-rows > li")).to_have_count(4)


def test_no_horizontal_scroll_at_1280_and_1920_with_the_drill_down_open(page: Page) -> None:
    open_drill(page, "acme")
    expect(page.locator("#drill-rows > li")).to_have_count(4)
    for width in (1280, 1920):
        over, wide = no_horizontal_scroll(page, width)
        assert over <= 0, f"{width}px window: the page is {over}px wider: {wide}"
    page.set_viewport_size({"width": 1500, "height": 1000})


def test_a_query_expands_to_its_full_text_and_a_search_highlights_matches(page: Page) -> None:
    open_drill(page, "acme")
    row = page.locator("#drill-rows > li").nth(2)
    row.get_by_role("button", name=re.compile("Show the full query")).click()
    full = row.locator(".full pre")
    expect(full).to_be_visible()
    expect(full).to_contain_text("group_left")
    page.locator("#drill-search").fill("NEEDLE")
    expect(page.locator("#drill-rows > li")).to_have_count(1)
    expect(page.locator("#drill-count")).to_have_text("1 of 1")
    expect(page.locator("#drill-rows mark").first).to_have_text("needle")
    # Still open after the live updates that followed the search.
    expect(page.locator("#drill-rows > li .full pre")).to_contain_text("group_left")
    full_page_screenshot(page, "inspector-drilldown.png")


def test_a_filter_the_server_refuses_is_marked_at_its_field_and_lists_nothing(page: Page) -> None:
    open_drill(page, "acme")
    rows, error = page.locator("#drill-rows > li"), page.locator("#drill-filter-error")
    expect(rows).to_have_count(4)
    page.locator("#drill-regex").check()
    page.locator("#drill-search").fill("rate([")
    expect(error).to_be_visible()
    expect(error).to_contain_text("RE2 regex:")
    expect(page.locator("#drill-search")).to_have_attribute("aria-invalid", "true")
    expect(rows).to_have_count(0)  # not the earlier rows, as if they matched
    expect(page.locator("#drill-count")).to_have_text("")
    expect(page.locator("#drill-title")).to_have_text("Requests of tenant acme: nothing listed")
    page.get_by_role("button", name="Cancel matching…").click()
    expect(page.locator("#drill-message")).to_contain_text("Not cancelled: RE2 regex: ")
    page.locator("#drill-search").fill("rate")
    expect(error).to_be_hidden()
    expect(page.locator("#drill-title")).to_contain_text("matches /rate/")
    expect(rows).to_have_count(3)
    page.locator("#drill-regex").uncheck()
    page.locator("#drill-search").fill("")
    page.locator("#drill-min-wait").fill("-5")
    expect(error).to_have_text("Waited ≥: must be a finite number of seconds, 0 or more")
    expect(page.locator("#drill-min-wait")).to_have_attribute("aria-invalid", "true")
    expect(rows).to_have_count(0)
    page.locator("#drill-min-wait").fill("")
    expect(rows).to_have_count(4)
    expect(page.locator("#drill-min-wait")).not_to_have_attribute("aria-invalid", "true")


def test_a_waited_box_the_browser_cannot_read_as_a_number_is_marked_not_dropped(
    page: Page,
) -> None:
    open_drill(page, "acme")
    rows, error = page.locator("#drill-rows > li"), page.locator("#drill-filter-error")
    box = page.locator("#drill-min-wait")
    expect(rows).to_have_count(4)
    box.press_sequentially("-")  # the box's value is "" now, as if it were blank
    expect(error).to_have_text("Waited ≥: must be a number of seconds")
    expect(box).to_have_attribute("aria-invalid", "true")
    expect(rows).to_have_count(0)
    page.wait_for_timeout(1000)  # live updates later: still not the unfiltered rows
    expect(rows).to_have_count(0)
    # Nor does cancel by filter take every queued request as if the box were blank.
    page.get_by_role("button", name="Cancel matching…").click()
    expect(page.locator("#drill-message")).to_have_text(
        "Not cancelled: first fix the filter box marked above."
    )
    expect(page.locator("#cancel-dialog")).to_be_hidden()
    box.fill("")
    expect(error).to_be_hidden()
    expect(rows).to_have_count(4)
    expect(box).not_to_have_attribute("aria-invalid", "true")


def test_the_oldest_of_a_list_cut_short_is_only_the_oldest_listed(
    page: Page, traffic: Traffic
) -> None:
    page.goto("/")
    traffic.enqueue("delta", "up", count=55)
    page.get_by_role("button", name="Requests of delta").click()
    expect(page.locator("#drill-count")).to_have_text("50 of 55")
    tag = page.locator("#drill-rows > li.oldest .oldest-tag")
    # Five are not listed: one of them could be older, so it does not say "oldest".
    expect(tag).to_have_text("oldest listed")
    page.locator("#drill-more").click()
    expect(page.locator("#drill-count")).to_have_text("55 of 55")
    expect(tag).to_have_text("oldest")
