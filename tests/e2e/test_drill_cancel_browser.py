"""Cancelling from the drill-down in Chromium: one request, or every one a filter matches.

Each asks first, its frontend is told, and History lists it. The module
queues acme's four requests once (tests/e2e/drill_pages.py) for the tests
that only preview or are refused; each test that cancels queues requests of
its own, under a tenant of its own.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, Route, StorageState, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic
from tests.e2e.drill_pages import (  # noqa: F401 - queue_acme is the fixture acme_queued
    SLOW,
    away_from_the_list,
    cancel_matching,
    open_drill,
    queue_acme,
    treeitem,
)

pytestmark = pytest.mark.usefixtures("acme_queued")


def test_cancelling_one_asks_first_then_it_vanishes_and_its_frontend_is_told(
    page: Page, traffic: Traffic
) -> None:
    traffic.enqueue("runaway", SLOW)
    open_drill(page, "runaway")
    row = page.locator("#drill-rows > li").first
    expect(row.locator(".q")).to_have_text("sum by (job) (rate(needle_seconds_total[5m])) …")
    rid = row.get_attribute("data-id")
    row.get_by_role("button", name="Cancel…").click()
    dialog = page.locator("#cancel-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text(rid)
    # One request: worded for one, and Enter in the note confirms (never drops it).
    expect(page.locator("#cancel-confirm")).to_have_text("Cancel the request")
    expect(page.locator("#cancel-back")).to_have_text("Keep it")
    page.locator("#cancel-note").fill("runaway join")
    page.locator("#cancel-note").press("Enter")
    expect(dialog).to_be_hidden()
    expect(page.locator("#drill-message")).to_have_text(f"Cancelled {rid}.")
    # The focus is back on its Cancel…, so the list may hold the row, saying
    # it left (unless a frame without it came while the dialog had the focus).
    away_from_the_list(page)
    expect(page.locator("#drill-rows > li")).to_have_count(0)
    expect(treeitem(page, "runaway")).to_have_count(0)  # its queue emptied: the row goes
    failed = [r for r in traffic.replies if r.get("type") == "failed"]
    assert any(r["error"] == "cancelled by operator erin: runaway join" for r in failed), (
        traffic.replies
    )


def test_cancel_matching_with_a_minimum_wait_previews_the_requests_the_panel_shows(
    page: Page,
) -> None:
    open_drill(page, "acme")
    expect(page.locator("#drill-rows > li")).to_have_count(4)
    page.locator("#drill-min-wait").fill("0")
    expect(page.locator("#drill-count")).to_have_text("4 of 4")
    page.get_by_role("button", name="Cancel matching…").click()
    expect(page.locator("#cancel-title")).to_have_text("Cancel 4 queued requests?")
    page.locator("#cancel-back").click()
    page.locator("#drill-min-wait").fill("")


def test_cancel_matching_nothing_says_so_instead_of_asking_to_cancel_0(page: Page) -> None:
    open_drill(page, "acme")
    page.locator("#drill-search").fill("no-such-query-text")
    expect(page.locator("#drill-rows > li")).to_have_count(0)
    page.get_by_role("button", name="Cancel matching…").click()
    expect(page.locator("#drill-message")).to_contain_text("Nothing to cancel")
    expect(page.locator("#cancel-dialog")).to_be_hidden()
    page.locator("#drill-search").fill("")


def test_cancel_matching_is_for_queued_requests_only_and_says_so(page: Page) -> None:
    open_drill(page, "acme")
    cancel = page.get_by_role("button", name="Cancel matching…")
    page.locator("#drill-state").select_option("in_flight")
    expect(cancel).to_be_disabled()
    expect(page.locator("#drill-cancel-why")).to_be_visible()
    expect(cancel).to_have_accessible_description(re.compile("Only queued requests"))
    page.locator("#drill-state").select_option("")
    expect(cancel).to_be_enabled()
    expect(page.locator("#drill-cancel-why")).to_be_hidden()
    cancel.click()
    expect(page.locator("#cancel-text")).to_contain_text("Running requests are not cancelled")
    expect(page.locator("#cancel-confirm")).to_have_text("Cancel them")
    page.locator("#cancel-back").click()


def test_cancel_matching_s_refusal_stays_until_the_user_acts_again(page: Page) -> None:
    page.goto("/?projection=tenant-first")
    page.locator('.projection input[value="component-first"]').check()
    page.get_by_role("button", name="Requests of ingester", exact=True).click()
    expect(page.locator("#drill-title")).to_have_text("Requests of ingester")
    page.get_by_role("button", name="Cancel matching…").click()
    message = page.locator("#drill-message")
    expect(message).to_have_text("Cancelling by filter needs a tenant, or a search or regex.")
    expect(message).to_have_class(re.compile(r"\bmsg-error\b"))
    page.wait_for_timeout(1500)  # several live updates later
    expect(message).to_be_visible()
    page.locator("#drill-search").fill("rate")  # acting again clears it
    expect(message).to_be_hidden()
    page.locator("#drill-search").fill("")
    page.locator('.projection input[value="tenant-first"]').check()


# A clock time as the cancel dialog writes it: the browser's time of day and
# its zone's offset ("UTC" in a browser on UTC), for matching with History's UTC.
AT = r"\d\d:\d\d:\d\d UTC(?:[+−]\d{1,2}(?::\d\d)?)?"
# A cancel by filter takes what its count counted, and says when that was.
DONE_2 = re.compile(rf"^Cancelled 2 requests: those queued when counted at {AT}\.$")


# Another operator's cancel by filter, through the API with this page's session.
CANCEL_ELSEWHERE = """async (body) => {
  const csrf = document.cookie.match(/csrftoken=([^;]+)/)[1];
  const r = await fetch('/api/v1/queue/cancel/', {method: 'POST', credentials: 'same-origin',
    headers: {'Content-Type': 'application/json', 'X-CSRFToken': csrf},
    body: JSON.stringify(body)});
  return (await r.json()).cancelled;
}"""


def test_the_count_a_cancel_by_filter_asks_about_follows_the_queue_while_it_asks(
    page: Page, traffic: Traffic
) -> None:
    traffic.enqueue("live", "up", count=4)
    traffic.enqueue("live", "kept", count=2)
    open_drill(page, "live")
    expect(page.locator("#drill-rows > li")).to_have_count(6)
    page.get_by_role("button", name="Cancel matching…").click()
    title = page.locator("#cancel-title")
    expect(title).to_have_text("Cancel 6 queued requests?")
    # Four leave while the dialog asks: the question follows, so Cancel is
    # not pressed on a count the queue no longer has.
    assert page.evaluate(CANCEL_ELSEWHERE, {"tenant": "live", "search": "up"}) == 4
    # A live frame after the server's cancel: the suite's ten seconds (a busy machine).
    expect(title).to_have_text("Cancel 2 queued requests?")
    page.get_by_role("button", name="Cancel them").click()
    expect(page.locator("#drill-message")).to_have_text(DONE_2)


def test_a_count_that_falls_to_nothing_offers_only_close_until_requests_come_back(
    page: Page, traffic: Traffic, server: DaphneProcess
) -> None:
    traffic.enqueue("emptied", "up", count=2)
    open_drill(page, "emptied")
    expect(page.locator("#drill-rows > li")).to_have_count(2)
    page.get_by_role("button", name="Cancel matching…").click()
    confirm, back = page.locator("#cancel-confirm"), page.locator("#cancel-back")
    expect(page.locator("#cancel-title")).to_have_text("Cancel 2 queued requests?")
    confirm.focus()
    assert page.evaluate(CANCEL_ELSEWHERE, {"tenant": "emptied"}) == 2
    expect(page.locator("#cancel-title")).to_have_text("Nothing is queued to cancel now")
    expect(confirm).to_be_hidden()
    expect(back).to_have_text("Close")
    expect(back).to_be_focused()  # the focus was on Cancel: not left on nothing
    # Enter in the note submits the form: with nothing counted, it cancels nothing.
    page.locator("#cancel-note").press("Enter")
    expect(page.locator("#cancel-dialog")).to_be_visible()
    traffic.enqueue("emptied", "up")
    expect(page.locator("#cancel-title")).to_have_text("Cancel 1 queued request?")
    expect(confirm).to_be_visible()
    expect(back).to_have_text("Keep them")
    back.click()
    expect(page.locator("#cancel-dialog")).to_be_hidden()
    assert cancel_matching(server, "emptied", "up") == 1


def _unanswered_recounts(route: Route) -> None:
    """The dialog's recounts fail from here, so the count on screen is the one confirmed."""
    if '"dry_run":true' in (route.request.post_data or ""):
        route.fulfill(status=503, content_type="application/json", body='{"detail": "held"}')
    else:
        route.continue_()


def test_requests_that_arrive_after_the_count_the_operator_confirmed_stay_queued(
    page: Page, traffic: Traffic, server: DaphneProcess
) -> None:
    traffic.enqueue("counted", "up", count=2)
    open_drill(page, "counted")
    rows = page.locator("#drill-rows > li")
    expect(rows).to_have_count(2)
    page.get_by_role("button", name="Cancel matching…").click()
    title = page.locator("#cancel-title")
    expect(title).to_have_text("Cancel 2 queued requests?")
    counted_at = re.compile(rf"2 when counted at {AT}, counted again each second")
    expect(page.locator("#cancel-text")).to_contain_text(counted_at)
    expect(page.locator("#cancel-text")).to_contain_text("none that arrive after the count")
    page.route("**/api/v1/queue/cancel/", _unanswered_recounts)
    try:
        # Three more that match arrive after the count the dialog shows.
        traffic.enqueue("counted", "up", count=3)
        expect(rows).to_have_count(5)
        expect(title).to_have_text("Cancel 2 queued requests?")
        page.get_by_role("button", name="Cancel them").click()
        expect(page.locator("#drill-message")).to_have_text(DONE_2)
    finally:
        page.unroute("**/api/v1/queue/cancel/", _unanswered_recounts)
    expect(rows).to_have_count(3)
    # The later three were still queued: a cancel of everything takes them.
    assert cancel_matching(server, "counted", "up") == 3


def test_cancelling_by_filter_previews_the_count_then_cancels_them_all(
    page: Page, traffic: Traffic
) -> None:
    traffic.enqueue("beta", "up", count=2)
    open_drill(page, "beta")
    expect(page.locator("#drill-rows > li")).to_have_count(2)
    page.get_by_role("button", name="Cancel matching…").click()
    dialog = page.locator("#cancel-dialog")
    expect(page.locator("#cancel-title")).to_have_text("Cancel 2 queued requests?")
    page.get_by_role("button", name="Cancel them").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("#drill-rows > li")).to_have_count(0)
    done = page.locator("#drill-message")
    expect(done).to_have_text(DONE_2)
    expect(done).to_have_class(re.compile(r"\bmsg-success\b"))
    page.wait_for_timeout(1500)  # several live updates later
    expect(done).to_have_text(DONE_2)
    page.locator("#drill-close").click()


def test_the_cancel_appears_on_the_history_page(page: Page, traffic: Traffic) -> None:
    # One request cancelled with a note, then two by a filter, from the drill-down.
    traffic.enqueue("noted", SLOW)
    open_drill(page, "noted")
    page.locator("#drill-rows > li").first.get_by_role("button", name="Cancel…").click()
    page.locator("#cancel-note").fill("runaway join")
    page.locator("#cancel-confirm").click()
    expect(page.locator("#drill-message")).to_contain_text("Cancelled")
    away_from_the_list(page)
    expect(page.locator("#drill-rows > li")).to_have_count(0)
    traffic.enqueue("filtered", "up", count=2)
    open_drill(page, "filtered")
    expect(page.locator("#drill-rows > li")).to_have_count(2)
    page.get_by_role("button", name="Cancel matching…").click()
    page.get_by_role("button", name="Cancel them").click()
    expect(page.locator("#drill-message")).to_have_text(DONE_2)
    page.goto("/history/")
    cancels = page.locator("#operator-cancels")
    expect(cancels).to_contain_text("Cancelled request")
    expect(cancels).to_contain_text("by erin via UI")
    expect(cancels).to_contain_text("runaway join")
    expect(cancels).to_contain_text("Cancelled 2 of 2 matching")
    expect(cancels).to_contain_text("tenant=filtered")


def test_a_cancel_by_filter_says_its_count_s_zone_and_which_it_could_not_take(
    browser: Browser, server: DaphneProcess, signed_in: StorageState, traffic: Traffic
) -> None:
    # A browser five and a half hours east of UTC: the times say so.
    context = browser.new_context(
        base_url=server.base_url, storage_state=signed_in, timezone_id="Asia/Kolkata"
    )
    context.set_default_timeout(10_000)
    page = context.new_page()
    try:
        traffic.enqueue("partial", "up")
        traffic.enqueue("partial", "gone", count=2)
        traffic.enqueue("partial", "more")
        open_drill(page, "partial")
        expect(page.locator("#drill-rows > li")).to_have_count(4)
        page.get_by_role("button", name="Cancel matching…").click()
        dialog = page.locator("#cancel-dialog")
        # A screen reader hears the count and its instant, not only the title.
        expect(dialog).to_have_accessible_description(
            re.compile(r"4 when counted at \d\d:\d\d:\d\d UTC\+5:30, counted again each second")
        )
        status = page.locator("#cancel-status")
        expect(status).to_have_attribute("role", "status")
        page.wait_for_timeout(1500)  # recounts of the same number: nothing to announce
        expect(status).to_have_text("")
        assert cancel_matching(server, "partial", "more") == 1
        expect(page.locator("#cancel-title")).to_have_text("Cancel 3 queued requests?")
        expect(status).to_have_text("Now 3 queued requests to cancel.")
        # Two of the three counted leave between the last count and the click.
        page.route("**/api/v1/queue/cancel/", _unanswered_recounts)
        assert cancel_matching(server, "partial", "gone") == 2
        page.get_by_role("button", name="Cancel them").click()
        done = page.locator("#drill-message")
        expect(done).to_have_text(
            re.compile(
                r"^Cancelled 1 of the 3 requests counted at \d\d:\d\d:\d\d UTC\+5:30: "
                r"the other 2 had started running or left the queue before the cancel\.$"
            )
        )
        expect(done).to_have_class(re.compile(r"\bmsg-success\b"))
        page.unroute("**/api/v1/queue/cancel/", _unanswered_recounts)

        # None of those counted is left: not said as a success.
        traffic.enqueue("none-left", "up", count=2)
        open_drill(page, "none-left")
        expect(page.locator("#drill-rows > li")).to_have_count(2)
        page.get_by_role("button", name="Cancel matching…").click()
        expect(page.locator("#cancel-title")).to_have_text("Cancel 2 queued requests?")
        page.route("**/api/v1/queue/cancel/", _unanswered_recounts)
        assert cancel_matching(server, "none-left", "") == 2
        page.get_by_role("button", name="Cancel them").click()
        expect(done).to_have_text(
            re.compile(
                r"^Nothing was cancelled: the 2 counted at \d\d:\d\d:\d\d UTC\+5:30 had "
                r"started running or left the queue before Cancel\.$"
            )
        )
        expect(done).to_have_class(re.compile(r"\bmsg-info\b"))
    finally:
        context.close()
