"""The drill-down's regex highlighting in Chromium: an RE2 regex must never stall the page."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, Route, expect

from tests.e2e.conftest import Traffic

# RE2 runs it in time linear in the text, and finds "zzz" on the query's
# second line. JavaScript's backtracking tries (a+)+$ some 2**29 ways on the
# row's first line, which ends in " …", not in "a": seconds of the page's
# thread (with more a's, longer than anyone waits: a hung tab).
BACKTRACKS = "(a+)+$|zzz"
QUERY = "a" * 28 + "\nzzz"
# Chromium's long tasks (over 50 ms of the page's thread), the longest seen.
WATCH_LONG_TASKS = """() => {
  window.longestTask = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      window.longestTask = Math.max(window.longestTask, e.duration);
    }
  }).observe({ type: "longtask" });
}"""


@pytest.fixture(scope="module", autouse=True)
def _marks_queued(traffic: Traffic) -> None:
    """Tenant marks' two requests: one JavaScript backtracks on, one it can mark."""
    traffic.enqueue("marks", QUERY)
    traffic.enqueue("marks", "rate(b[5m])")


def open_marks_drill(page: Page) -> None:
    """The drill-down on tenant marks, listing its two requests, its search a regex."""
    page.goto("/")
    page.get_by_role("button", name="Requests of marks", exact=True).click()
    expect(page.locator("#drill-rows > li")).to_have_count(2)
    page.locator("#drill-regex").check()


def test_a_regex_javascript_backtracks_on_leaves_the_page_live(page: Page) -> None:
    open_marks_drill(page)
    rows = page.locator("#drill-rows > li")
    page.evaluate(WATCH_LONG_TASKS)
    page.locator("#drill-search").fill(BACKTRACKS)
    expect(rows).to_have_count(1)
    expect(rows.first.locator(".q")).to_have_text("a" * 28 + " …")
    # A few frames more, each applied with the regex in the box.
    frames = page.evaluate("() => window.inspectorClient.frames")
    page.wait_for_function(f"() => window.inspectorClient.frames >= {frames + 4}")
    assert page.evaluate("() => window.longestTask") < 1000
    # Given up on, it marks nothing: the line has no "zzz".
    expect(rows.first.locator(".q mark")).to_have_count(0)
    # A regex that JavaScript runs at once is marked where it matches.
    page.locator("#drill-search").fill("rate\\(b")
    expect(rows).to_have_count(1)
    expect(rows.first.locator(".q mark")).to_have_text("rate(b")
    rows.first.locator(".expand").click()
    expect(rows.first.locator(".full mark")).to_have_text("rate(b")


def test_a_regex_javascript_cannot_read_lists_its_rows_unmarked(page: Page) -> None:
    open_marks_drill(page)
    # RE2's (?i) flag: JavaScript refuses the regex, the server does not.
    page.locator("#drill-search").fill("(?i)RATE")
    rows = page.locator("#drill-rows > li")
    expect(rows).to_have_count(1)
    expect(rows.first.locator(".q")).to_have_text("rate(b[5m])")
    expect(rows.first.locator(".q mark")).to_have_count(0)
    expect(page.locator("#drill-filter-error")).to_be_hidden()


def _slow_worker_script(route: Route) -> None:
    """The highlighting worker's script, answered as a busy machine might: late."""
    time.sleep(0.8)  # over the 250 ms a worker has to answer a job
    route.continue_()


def test_a_worker_slow_to_start_still_marks_the_first_regex(page: Page) -> None:
    # Timed from the worker's start, the first job ran out of time while
    # the script was still loading, and the regex was never marked again.
    page.route("**/regex_worker*.js", _slow_worker_script)
    try:
        open_marks_drill(page)
        rows = page.locator("#drill-rows > li")
        page.locator("#drill-search").fill("rate\\(b")
        expect(rows).to_have_count(1)
        expect(rows.first.locator(".q mark")).to_have_text("rate(b")
    finally:
        page.unroute("**/regex_worker*.js", _slow_worker_script)
