"""The drill-down in Chromium: requests listed, expanded, searched, cancelled, the oldest marked.

A real Daphne and real websocket frontends and queriers (tests/e2e/conftest.py).
The module queues acme's four requests once; the tests that only read them
open the drill-down themselves, and each test that cancels or runs requests
queues its own, under a tenant of its own. The story of the re-queued
requests (the `requeued` and `never_queued` fixtures) is acme's four again,
once a querier took them and left.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, Route, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic, full_page_screenshot

SLOW = "sum by (job) (rate(needle_seconds_total[5m]))\n  / on (job) group_left\n  up"


def treeitem(page: Page, label: str) -> object:
    return page.get_by_role("treeitem", name=re.compile(rf"^{re.escape(label)}"))


WIDEST = """() => Array.from(document.querySelectorAll("body *"))
  .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
  .slice(0, 8).map((el) => `${el.tagName}#${el.id}.${el.className}`)"""


def no_horizontal_scroll(page: Page, width: int) -> tuple[int, str]:
    """(pixels the page is wider than the window, what sticks out) at `width`."""
    page.set_viewport_size({"width": width, "height": 1000})
    page.wait_for_timeout(300)  # let layout settle after the resize
    scroll, client = page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    return scroll - client, " ".join(page.evaluate(WIDEST))


@pytest.fixture(scope="module", autouse=True)
def _acme_queued(traffic: Traffic) -> None:
    """acme's four requests, the module's first (client ids 1 to 4): two alike, a long one, and
    a short one."""
    traffic.enqueue("acme", "rate(http_requests_total[1m])", count=2)
    traffic.enqueue("acme", SLOW)
    traffic.enqueue("acme", "count(up)")


def open_drill(page: Page, tenant: str) -> None:
    """The inspector, freshly loaded, with the drill-down open on `tenant`."""
    page.goto("/")
    expect(page.locator("#live-state")).to_have_text("live")
    page.get_by_role("button", name=f"Requests of {tenant}", exact=True).click()
    expect(page.locator("#drill-title")).to_have_text(f"Requests of tenant {tenant}")


@pytest.fixture(scope="module")
def requeued(page: Page, traffic: Traffic) -> None:
    """acme's four requests, each handed to a querier that then left: back in the queue."""
    page.goto("/")
    querier = traffic.querier("q-left", workers=4, latency=lambda _: 30.0)
    try:
        expect(page.locator('[data-querier="q-left"]')).to_contain_text("4/4 busy")
    finally:
        traffic.close(querier)
    expect(treeitem(page, "acme: 4 queued")).to_be_visible()


@pytest.fixture(scope="module")
def never_queued(requeued: None, traffic: Traffic) -> None:
    """A fifth request of acme's, "never", which its rule puts at priority 5: before the rest."""
    traffic.enqueue("acme", "never")


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
        "Queued requests of tenant acme whose query contains “rate”, waited ≥ 2.0 s"
    )
    page.locator("#drill-state").select_option("in_flight")
    expect(title).to_have_text(
        "Running requests of tenant acme whose query contains “rate”, waited ≥ 2.0 s"
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
    expect(done).to_have_text("Cancelled 2 requests.")
    expect(done).to_have_class(re.compile(r"\bmsg-success\b"))
    page.wait_for_timeout(1500)  # several live updates later
    expect(done).to_have_text("Cancelled 2 requests.")
    page.locator("#drill-close").click()


def test_the_cancel_appears_on_the_history_page(page: Page, traffic: Traffic) -> None:
    # One request cancelled with a note, then two by a filter, from the drill-down.
    traffic.enqueue("noted", SLOW)
    open_drill(page, "noted")
    page.locator("#drill-rows > li").first.get_by_role("button", name="Cancel…").click()
    page.locator("#cancel-note").fill("runaway join")
    page.locator("#cancel-confirm").click()
    expect(page.locator("#drill-rows > li")).to_have_count(0)
    traffic.enqueue("filtered", "up", count=2)
    open_drill(page, "filtered")
    expect(page.locator("#drill-rows > li")).to_have_count(2)
    page.get_by_role("button", name="Cancel matching…").click()
    page.get_by_role("button", name="Cancel them").click()
    expect(page.locator("#drill-message")).to_have_text("Cancelled 2 requests.")
    page.goto("/history/")
    cancels = page.locator("#operator-cancels")
    expect(cancels).to_contain_text("Cancelled request")
    expect(cancels).to_contain_text("by erin via UI")
    expect(cancels).to_contain_text("runaway join")
    expect(cancels).to_contain_text("Cancelled 2 of 2 matching")
    expect(cancels).to_contain_text("tenant=filtered")


@pytest.mark.usefixtures("requeued")
def test_a_request_re_queued_after_its_querier_disconnected_says_so(page: Page) -> None:
    open_drill(page, "acme")
    rows = page.locator("#drill-rows > li")
    expect(rows).to_have_count(4)
    for i in range(4):
        expect(rows.nth(i).locator(".meta")).to_contain_text(
            "re-queued after its querier disconnected (attempt 2 next)"
        )


@pytest.mark.usefixtures("never_queued")
def test_the_oldest_request_link_opens_its_queue_on_that_request_marked_and_focused(
    page: Page,
) -> None:
    # Back from the querier that left, acme's requests each went to the front
    # (the oldest last); the priority 5 one goes before them all.
    page.goto("/")
    link = page.locator("#oldest-link")
    expect(link).to_have_text("acme / ingester")
    link.click()
    expect(page.locator("#drill-title")).to_have_text("Requests of tenant acme / ingester")
    rows, marked = page.locator("#drill-rows > li"), page.locator("#drill-rows > li.oldest")
    expect(rows).to_have_count(5)
    expect(rows.first.locator(".q")).to_have_text("never")
    expect(marked).to_have_count(1)
    # The first request of the session (its frontend's id 1), wherever it is listed.
    expect(marked.locator(".meta")).to_contain_text(re.compile(r"· id 1 ·"))
    expect(marked.locator(".oldest-tag")).to_have_text("oldest")
    expect(marked).to_be_focused()
    expect(marked).to_be_in_viewport(ratio=1)


@pytest.mark.usefixtures("never_queued")
def test_the_oldest_mark_follows_the_queue_to_the_next_oldest_or_none(
    page: Page, traffic: Traffic
) -> None:
    page.goto("/")
    page.locator("#oldest-link").click()
    rows, marked = page.locator("#drill-rows > li"), page.locator("#drill-rows > li.oldest")
    expect(marked.locator(".meta")).to_contain_text(re.compile(r"· id 1 ·"))
    marked.get_by_role("button", name="Cancel…").click()
    page.locator("#cancel-confirm").click()
    expect(rows).to_have_count(4)
    expect(marked.locator(".meta")).to_contain_text(re.compile(r"· id 2 ·"))
    running = page.locator("#drill-rows > li.running")
    querier = traffic.querier("q-all", workers=4, latency=lambda _: 30.0)
    try:
        expect(running).to_have_count(4)
        retried = running.filter(has_text="count(up)").locator(".meta")
        expect(retried).to_contain_text("attempt 2: a retry after a querier disconnected")
        first_run = running.filter(has_text="never").locator(".meta")
        expect(first_run).not_to_contain_text("attempt")
        expect(marked).to_have_count(0)  # a running request is not queued
    finally:
        traffic.close(querier)
    # Only the one on its first attempt comes back; the retried ones failed.
    expect(rows).to_have_count(1)
    expect(marked.locator(".q")).to_have_text("never")


def test_a_busy_worker_opens_the_request_it_runs(page: Page, traffic: Traffic) -> None:
    traffic.enqueue("worked", "up")
    page.goto("/")
    # Workers to spare: with acme's four requests queued ahead of worked's,
    # four workers all went to acme's.
    querier = traffic.querier("q-slow", workers=8, latency=lambda _: 30.0)
    try:
        busy = page.locator(".w-busy[data-request]").filter(has_text="· worked /")
        expect(busy).to_be_visible()
        rid = busy.get_attribute("data-request")
        busy.click()
        dialog = page.locator("#request-dialog")
        expect(dialog).to_be_visible()
        expect(page.locator("#request-title")).to_have_text(f"Request {rid}")
        expect(page.locator("#request-facts")).to_contain_text("running on q-slow")
        # Its first run: no attempts to speak of.
        expect(page.locator("#request-facts")).not_to_contain_text("Attempts")
        # The open dialog follows its request: the running time goes on.
        state = page.locator("#request-facts dd").nth(3)
        shown = state.text_content() or ""
        expect(state).not_to_have_text(shown, timeout=3_000)
        expect(state).to_contain_text("running on q-slow")
        # A follow-up still on its way when the dialog closes does not open it again.
        held: list[Route] = []
        followed = re.compile(r"/api/v1/queue/requests/[^/?]+/")
        page.route(followed, lambda route: held.append(route))
        for _ in range(30):
            if held:
                break
            page.wait_for_timeout(100)
        assert held, "the open dialog asked nothing more about its request"
        page.get_by_role("button", name="Close", exact=True).click()
        expect(dialog).to_be_hidden()
        for route in held:
            route.continue_()
        page.unroute(followed)
        page.wait_for_timeout(300)  # the late answer's handler runs
        expect(dialog).to_be_hidden()
        expect(page.locator("#longest li").first).to_be_visible()
        # Busy workers' long lines must not widen the page either.
        for width in (1280, 1920):
            over, wide = no_horizontal_scroll(page, width)
            assert over <= 0, f"{width}px window, queriers busy: {over}px wider: {wide}"
    finally:
        traffic.close(querier)


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


PINNED = """
from api.store import services
services.tenant_put(tenant_id="pinned", expected_version=None, author=None, source="cli", config={
    "max_queriers_per_tenant": 2,
    "query_priority": {"enabled": True, "default_priority": 0, "priorities": [
        {"priority": 4, "reserved_queriers": 1, "query_attributes": [{"regex": "urgent"}]}]}})
"""
SERVING = re.compile(
    r"^pinned is served by 2 queriers of \d+ \(its shuffle shard\): \S+ and \S+\. "
    r"Reserved: (\S+) takes only its priority 4 and above, so its requests below "
    r"priority 4 wait for (\S+) \(1 querier\)\.( Now 1 of their 1 workers is idle\.)?$"
)


def test_a_tenant_s_drill_names_its_queriers_and_what_its_reservation_leaves_the_rest(
    page: Page, traffic: Traffic, server: DaphneProcess
) -> None:
    server.run_python(PINNED)
    page.goto("/")
    # More than the three single workers take: another tenant's drill stays at hand.
    traffic.enqueue("bystander", "up", count=4)
    with traffic.queriers("q-pin", 3, latency=lambda _: 30.0):
        # More than the three single workers take, whenever the config lands.
        traffic.enqueue("pinned", "up", count=6)
        page.get_by_role("button", name="Requests of pinned").click()
        line = page.locator("#drill-serving")
        expect(line).to_have_text(SERVING, timeout=15_000)
        reserved, rest, _ = SERVING.findall(line.inner_text())[0]
        assert reserved != rest
        # The querier card says the same reservation, from the querier's side.
        card = page.locator(f'.querier[data-querier="{reserved}"]')
        expect(card).to_contain_text("pinned · priority ≥ 4")
        # Another tenant's drill does not keep this one's line.
        page.get_by_role("button", name="Requests of bystander").click()
        expect(line).to_be_hidden()


def test_the_serving_line_covers_a_tenant_without_a_shard_and_long_shards(page: Page) -> None:
    page.goto("/")
    cases = [
        {"shard": None, "queriers": 5, "reserved": [[9, ["qa"]]]},
        {"shard": None, "queriers": 5, "reserved": []},
        {"shard": [f"q{i}" for i in range(12)], "queriers": 20, "reserved": []},
        {"shard": ["a", "b", "c", "d"], "queriers": 9, "reserved": [[9, ["a"]], [3, ["b", "c"]]]},
        {
            "shard": None,
            "queriers": 5,
            "reserved": [[9, ["qa", "qb"]]],
            "reserved_workers": {"idle": 7, "connected": 8},
        },
        {
            "shard": None,
            "queriers": 5,
            "reserved": [[9, ["qa"]]],
            "reserved_workers": {"idle": 0, "connected": 4},
        },
    ]
    said = page.evaluate(
        "async (cases) => { const m = await import('/static/dashboard/drill_text.js');"
        " return cases.map((c) => m.servingText('t', c)); }",
        cases,
    )
    assert said == [
        "Any of the 5 queriers may serve t. Reserved: qa takes only its priority 9 and above,"
        " so its requests below priority 9 wait for the other 4 queriers.",
        "",
        "t is served by 12 queriers of 20 (its shuffle shard):"
        " q0, q1, q2, q3, q4, q5, q6, q7 and 4 more.",
        "t is served by 4 queriers of 9 (its shuffle shard): a, b, c and d. Reserved: a takes"
        " only its priority 9 and above; b and c take only its priority 3 and above, so its"
        " requests below priority 3 wait for d (1 querier).",
        "Any of the 5 queriers may serve t. Reserved: qa and qb take only its priority 9 and"
        " above, so its requests below priority 9 wait for the other 3 queriers. Now 7 of their"
        " 8 workers are idle.",
        "Any of the 5 queriers may serve t. Reserved: qa takes only its priority 9 and above,"
        " so its requests below priority 9 wait for the other 4 queriers.",
    ]
