"""The drill-down and the queriers, in Chromium: a busy worker opens its request, and a
tenant's drill says which queriers may serve it.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, Route, expect

from api.wire.protocol import MIN_WORKERS
from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic, put_tenant
from tests.e2e.drill_pages import no_horizontal_scroll


def test_a_busy_worker_opens_the_request_it_runs(page: Page, traffic: Traffic) -> None:
    traffic.enqueue("worked", "up")
    page.goto("/")
    querier = traffic.querier("q-slow", latency=lambda _: 30.0)
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
        # Its next answer from the server: the suite's ten seconds (a busy machine), not three.
        expect(state).not_to_have_text(shown)
        expect(state).to_contain_text("running on q-slow")
        # A follow-up still on its way when the dialog closes does not open it again.
        held: list[Route] = []
        followed = re.compile(r"/api/v1/queue/requests/[^/?]+/")
        page.route(followed, lambda route: held.append(route))
        for _ in range(100):  # up to ten seconds: its next ask, late on a busy machine
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


PINNED = {
    "max_queriers_per_tenant": 2,
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        "priorities": [
            {"priority": 4, "reserved_queriers": 1, "query_attributes": [{"regex": "urgent"}]}
        ],
    },
}
QUERIERS = 3
# Every worker is busy (below): the reserved querier has none idle to speak of.
SERVING = re.compile(
    r"^pinned is served by 2 queriers of \d+ \(its shuffle shard\): \S+ and \S+\. "
    r"Reserved: (\S+) takes only its priority 4 and above, so its requests below "
    r"priority 4 wait for (\S+) \(1 querier\)\.$"
)


def test_a_tenant_s_drill_names_its_queriers_and_what_its_reservation_leaves_the_rest(
    page: Page, traffic: Traffic, server: DaphneProcess
) -> None:
    # Running before any querier connects: the shard and the reservation hold from the start.
    put_tenant(server, "pinned", PINNED)
    page.goto("/")
    # A querier runs at least MIN_WORKERS requests at once, whatever it asks
    # for (api.wire.protocol). One more than all the queriers' workers take
    # keeps bystander queued, and its drill at hand, whatever else is queued;
    # and it leaves no worker idle once they connect.
    traffic.enqueue("bystander", "up", count=QUERIERS * MIN_WORKERS + 1)
    with traffic.queriers("q-pin", QUERIERS, latency=lambda _: 30.0):
        # Below priority 4 only the one querier of its shard left unreserved
        # may take pinned's: one more than its workers keeps pinned queued too.
        traffic.enqueue("pinned", "up", count=MIN_WORKERS + 1)
        page.get_by_role("button", name="Requests of pinned").click()
        line = page.locator("#drill-serving")
        expect(line).to_have_text(SERVING)
        reserved, rest = SERVING.findall(line.inner_text())[0]
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
        " above, so its requests below priority 9 wait for the other 3 queriers. Now 7 of the"
        " 8 workers of its reserved queriers are idle.",
        "Any of the 5 queriers may serve t. Reserved: qa takes only its priority 9 and above,"
        " so its requests below priority 9 wait for the other 4 queriers.",
    ]


def test_a_request_gone_before_its_detail_came_shows_what_its_line_said(
    page: Page, traffic: Traffic
) -> None:
    traffic.enqueue("gone", "up")
    page.goto("/")
    # Enough workers to take what earlier tests left queued as well.
    querier = traffic.querier("q-gone", workers=32, latency=lambda _: 30.0)
    try:
        busy = page.locator('[data-querier="q-gone"] .w-busy[data-request]')
        busy = busy.filter(has_text="· gone /")
        expect(busy).to_have_count(1)
        # The request finishes before its detail is asked: answered as the
        # server answers an id no replica holds.
        detail = re.compile(r"/api/v1/queue/requests/[^/?]+/")
        page.route(detail, lambda route: route.fulfill(status=404, json={"detail": "gone"}))
        # The line as it reads at the click, read in the same turn of the page:
        # read first and clicked after, a live frame between moved its running
        # time on (100ms, then 200ms in the dialog) on a busy machine.
        line = busy.evaluate("el => { const text = el.textContent; el.click(); return text; }")
        expect(page.locator("#request-dialog")).to_be_visible()
        expect(page.locator("#request-gone")).to_be_visible()
        facts = page.locator("#request-facts")
        expect(facts.locator("dt")).to_have_text(["When opened"])
        expect(facts.locator("dd")).to_have_text(f"q-gone {line}")
        page.get_by_role("button", name="Close", exact=True).click()
        page.unroute(detail)
    finally:
        traffic.close(querier)


def test_the_busy_workers_are_one_tab_stop_and_arrow_keys_move_among_them(
    page: Page, traffic: Traffic
) -> None:
    traffic.enqueue("keys", "up", count=MIN_WORKERS)
    page.goto("/")
    querier = traffic.querier("q-keys", workers=MIN_WORKERS, latency=lambda _: 30.0)
    try:
        busy_here = page.locator('[data-querier="q-keys"] .w-busy[data-request]')
        expect(busy_here).to_have_count(MIN_WORKERS)
        busy = page.locator("#queriers .w-busy[data-request]")
        tab_stops = page.locator('#queriers .w-busy[data-request][tabindex="0"]')
        expect(tab_stops).to_have_count(1)
        busy.first.focus()
        page.keyboard.press("ArrowDown")
        expect(busy.nth(1)).to_be_focused()
        expect(tab_stops).to_have_count(1)
        expect(busy.nth(1)).to_have_attribute("tabindex", "0")
        page.keyboard.press("ArrowUp")
        expect(busy.first).to_be_focused()
    finally:
        traffic.close(querier)
