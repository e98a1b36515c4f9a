"""The inspector and editor in Chromium against a real Daphne and real protocol clients.

One server, browser and login per module. Each test queues the work it looks
at, under tenant names of its own, and opens the page it needs.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request

from playwright.sync_api import Page, WebSocket, expect

from dashboard.templatetags.dashboard_tags import format_wait, iso, visible
from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic, full_page_screenshot, one_rule, put_tenant
from tests.e2e.drill_pages import treeitem

REGEX = "query_priority.priorities[0].query_attributes[0].regex"
LIVE_WITHIN = 1_000  # ms: enqueued work must show without a reload within a second
# A duration as the inspector spells every one (format.js): Prometheus's units
# from a minute up, one unit with its decimals below ("9.9s", "1.23ms", "147µs").
DURATION = r"^((\d+(y|w|d|h|m|s))+|\d+(\.\d+)?(s|ms|µs))$"


def test_the_inspector_is_live(page: Page) -> None:
    page.goto("/")
    expect(page.locator("#live-state")).to_have_text("live")
    expect(page.get_by_role("tree")).to_be_attached()


def test_reserved_idle_querier_is_shown_as_such(page: Page, traffic: Traffic) -> None:
    page.goto("/")
    first = traffic.querier("q-1", latency=lambda _: 0.0)
    second = traffic.querier("q-2", latency=lambda _: 0.0)
    try:
        reserved = page.locator('[data-querier="q-1"]')
        expect(reserved).to_have_attribute("aria-label", "querier q-1: reserved · idle")
        expect(reserved).to_contain_text("gold · priority ≥ 9")
        expect(page.locator('[data-querier="q-2"]')).to_have_attribute(
            "aria-label", "querier q-2: idle"
        )
        expect(page.locator("#f-reserved")).to_have_text("1")
    finally:
        traffic.close(first)
        traffic.close(second)
    expect(page.locator('[data-querier="q-1"]')).to_have_count(0)


def test_enqueued_requests_appear_within_a_second_in_both_projections(
    page: Page, traffic: Traffic
) -> None:
    page.goto("/")
    traffic.enqueue("alpha", count=3)
    traffic.enqueue("beta", count=2)
    expect(treeitem(page, "alpha: 3 queued")).to_be_visible(timeout=LIVE_WITHIN)
    expect(treeitem(page, "beta: 2 queued")).to_be_visible(timeout=LIVE_WITHIN)
    page.get_by_text("component → tenant").click()
    ingester = treeitem(page, "ingester: 5 queued")
    expect(ingester).to_have_attribute("aria-expanded", "true")
    expect(treeitem(page, "alpha: 3 queued")).to_be_visible()
    traffic.enqueue("alpha")
    expect(treeitem(page, "alpha: 4 queued")).to_be_visible(timeout=LIVE_WITHIN)
    page.get_by_text("tenant → component").click()
    expect(page.get_by_role("tree").get_by_role("treeitem").first).to_have_accessible_name(
        "alpha: 4 queued (p0 4)"
    )


def test_tree_is_keyboard_navigable(page: Page, traffic: Traffic) -> None:
    traffic.enqueue("arrows", count=3)
    page.goto("/?projection=tenant-first")
    arrows = treeitem(page, "arrows: 3 queued")
    arrows.focus()
    expect(arrows).to_have_attribute("aria-expanded", "false")
    page.keyboard.press("ArrowRight")
    expect(arrows).to_have_attribute("aria-expanded", "true")
    expect(treeitem(page, "ingester: 3 queued")).to_be_visible()
    page.keyboard.press("ArrowRight")
    expect(treeitem(page, "ingester: 3 queued")).to_be_focused()
    page.keyboard.press("ArrowLeft")
    expect(arrows).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(treeitem(page, "ingester: 3 queued")).to_be_focused()


def test_pause_freezes_the_view_and_resume_catches_up(page: Page, traffic: Traffic) -> None:
    traffic.enqueue("frozen", count=2)
    page.goto("/?projection=tenant-first")
    expect(treeitem(page, "frozen: 2 queued")).to_be_visible()
    page.get_by_role("button", name="Pause").click()
    expect(page.locator("#live-state")).to_have_text("paused")
    traffic.enqueue("frozen")
    page.wait_for_timeout(600)
    expect(treeitem(page, "frozen: 2 queued")).to_be_visible()
    page.get_by_role("button", name="Resume").click()
    expect(treeitem(page, "frozen: 3 queued")).to_be_visible(timeout=LIVE_WITHIN)
    expect(page.locator("#live-state")).to_have_text("live")


def test_a_paused_inspector_that_reconnects_says_paused_not_reconnecting(page: Page) -> None:
    page.goto("/")
    expect(page.locator("#live-state")).to_have_text("live")
    page.get_by_role("button", name="Pause").click()
    expect(page.locator("#live-state")).to_have_text("paused")
    page.evaluate("window.inspectorClient.ws.close()")  # as a server restart drops it
    expect(page.locator("#live-state")).to_have_text("paused", timeout=LIVE_WITHIN)
    page.get_by_role("button", name="Resume").click()
    expect(page.locator("#live-state")).to_have_text("live")


def test_a_frontend_is_listed_with_its_outstanding_requests_until_it_disconnects(
    page: Page, traffic: Traffic, server: DaphneProcess
) -> None:
    page.goto("/")
    frontend = traffic.another_frontend(server.issue_token("frontend", "fe-panel"))
    host, port = frontend.ws.local_address[:2]
    row = page.locator(f'#frontends tr[data-frontend="websocket {host}:{port}"]')
    try:
        expect(row).to_have_attribute(
            "aria-label", f"websocket frontend {host}:{port}: 0 outstanding"
        )
        traffic.enqueue("delta", count=3, via=frontend)
        expect(row).to_have_attribute(
            "aria-label",
            f"websocket frontend {host}:{port}: 3 outstanding",
            timeout=LIVE_WITHIN,
        )
        expect(row.locator("td")).to_have_text(
            ["websocket", f"{host}:{port}", "fe-panel", "1", "3", re.compile(DURATION)]
        )
    finally:
        traffic.close(frontend)
    expect(row).to_have_count(0)
    expect(page.locator("#frontends-empty")).to_be_hidden()  # the module's frontend stays


def test_bad_regex_is_refused_on_its_field_then_a_good_rule_explains_and_applies(
    page: Page, traffic: Traffic
) -> None:
    traffic.enqueue("acme", count=4)  # judged by the saved rule: priority 0
    page.goto("/tenants/acme/")
    field = page.locator(f'[name="{REGEX}"]')
    field.fill("(special")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(f'[id="{REGEX}-err"]')).to_contain_text("RE2 rejects this regex")
    expect(page.locator("#error-summary")).to_contain_text("Nothing was saved")
    page.goto("/tenants/acme/")
    expect(page.locator(f'[name="{REGEX}"]')).to_have_value("^never$")

    page.locator(f'[name="{REGEX}"]').fill("special")
    page.get_by_label("Query (PromQL or match[] selectors)").fill('special_query{job="x"}')
    page.get_by_role("button", name="Explain").click()
    expect(page.locator("#explain-priority")).to_have_text("5")
    expect(page.locator("#explain-source")).to_have_text("rule 1, attribute 1")
    expect(page.locator("#explain-component")).to_have_text("ingester")
    full_page_screenshot(page, "tenant-editor.png")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#review-diff")).to_contain_text("special")  # the diff first
    page.get_by_role("button", name="Confirm and save").click()
    expect(page.locator(".msg-success")).to_contain_text("Saved acme")

    page.goto("/")
    traffic.enqueue("acme", query='special_query{job="x"}')
    acme = treeitem(page, "acme: 5 queued")
    expect(acme).to_be_visible()  # a server round trip: the suite's ten seconds on a busy machine
    expect(acme.locator(".prios").first).to_have_text("p5 1 · p0 4")


def patch_settings(server: DaphneProcess, changes: dict[str, str]) -> None:
    """Change the scheduler settings through the REST API, as another operator might."""
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/settings/",
        data=json.dumps(changes).encode(),
        method="PATCH",
        headers={
            "Authorization": f"Bearer {server.shared_token('editor')}",
            "Content-Type": "application/json",
            "If-Match": "*",
        },
    )
    with urllib.request.urlopen(request, timeout=15) as response:
        assert response.status == 200


def test_switching_the_running_layout_reshapes_the_tree(page: Page, traffic: Traffic) -> None:
    traffic.enqueue("reshaped")  # a queue for the tree to show in either layout
    page.goto("/")
    expect(page.locator("#running-layout")).to_have_text("tenant-first")
    page.get_by_role("button", name="Switch to component-first…").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("Switch the running layout to component-first?")
    # A stray Enter must not switch every querier's layout: Cancel has the focus.
    expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
    dialog.get_by_role("button", name="Switch to component-first").click()
    expect(page.locator(".msg-success")).to_contain_text("component-first layout")
    expect(page.locator("#running-layout")).to_have_text("component-first")
    expect(page.get_by_role("tree").get_by_role("treeitem").first).to_have_accessible_name(
        re.compile(r"^ingester: \d+ queued")
    )
    expect(page.locator('.projection input[value="component-first"]')).to_be_checked()


def test_a_layout_switched_elsewhere_turns_the_switch_around_and_it_still_works(
    page: Page, server: DaphneProcess
) -> None:
    """The button kept offering the layout already running, and a stale version."""
    patch_settings(server, {"layout": "component-first"})
    page.goto("/")
    expect(page.locator("#running-layout")).to_have_text("component-first")
    patch_settings(server, {"layout": "tenant-first", "stuck_threshold": "40s"})
    expect(page.locator("#running-layout")).to_have_text("tenant-first", timeout=5_000)
    page.get_by_role("button", name="Switch to component-first…").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("Switch the running layout to component-first?")
    dialog.get_by_role("button", name="Switch to component-first").click()
    expect(page.locator(".msg-success")).to_contain_text("component-first layout")
    expect(page.locator("#running-layout")).to_have_text("component-first")


def test_rollback_from_history_restores_the_rule(page: Page, server: DaphneProcess) -> None:
    put_tenant(server, "undo-me", one_rule("^never$"))
    put_tenant(server, "undo-me", one_rule("special"), replace=True)
    # A later revision of another kind: the change rolled back is not the newest.
    patch_settings(server, {"stuck_threshold": "45s"})
    page.goto("/history/")
    latest = page.locator(".revision").first
    expect(latest).to_contain_text("scheduler settings")
    change = page.locator(".revision", has_text="undo-me").first
    expect(change).to_contain_text("special")
    change.get_by_role("button", name=re.compile("Roll back")).click()
    expect(page.locator("#rollback-diff")).to_contain_text("special")  # its diff first
    page.locator("#confirm-rollback").click()
    expect(page.locator(".msg-success")).to_contain_text("Rolled back")
    page.goto("/tenants/undo-me/")
    expect(page.locator(f'[name="{REGEX}"]')).to_have_value("^never$")


def test_inspector_screenshot_with_busy_and_reserved_queriers(page: Page, traffic: Traffic) -> None:
    page.goto("/?projection=tenant-first")
    for i, tenant in enumerate(["analytics", "billing", "checkout", "search", "gold"]):
        traffic.enqueue(tenant, count=2 + 3 * i)
    traffic.enqueue("checkout", query="max(up)", start=0, end=3600, count=4)
    traffic.enqueue("gold", query="critical_alerts", count=3)
    slow = traffic.querier("q-slow", workers=4, latency=lambda _: 30.0)
    reserved = traffic.querier("q-a-reserved", workers=4, latency=lambda _: 30.0)
    try:
        expect(page.locator('[data-querier="q-slow"]')).to_contain_text("4/4 busy")
        # Longest running leads each line with how long it has run, ticking.
        running_for = page.locator("#longest li .run-for").first
        expect(running_for).to_have_text(re.compile(DURATION))
        first = running_for.text_content()
        # Ticking: any change will do, so the suite's ten seconds (a busy machine), not three.
        expect(running_for).not_to_have_text(first or "")
        treeitem(page, "checkout").click()
        page.wait_for_timeout(2_500)  # let the charts collect a few points
        full_page_screenshot(page, "inspector.png")
    finally:
        traffic.close(slow)
        traffic.close(reserved)


def test_the_charts_show_the_minutes_before_the_page_was_opened(
    page: Page, traffic: Traffic
) -> None:
    page.goto("/history/")  # no inspector open anywhere
    sent = len(traffic.replies)
    traffic.enqueue("unwatched", count=7)
    # The enqueues are only sent: the points checked start once the server
    # has queued all seven (a busy server's point in between counted fewer).
    deadline = time.monotonic() + 10
    while sum(r.get("type") == "enqueued" for r in traffic.replies[sent:]) < 7:
        assert time.monotonic() < deadline, traffic.replies[sent:]
        time.sleep(0.05)
    queued_at = time.time()
    # The server keeps a point a second meanwhile: four or so, of which two
    # are asked for (a busy machine's late ticks leave fewer in the window).
    page.wait_for_timeout(4_500)
    frames: list[str] = []

    def listen(socket: WebSocket) -> None:
        socket.on("framereceived", lambda payload: frames.append(payload))

    page.on("websocket", listen)
    opened_at = time.time()
    page.goto("/")
    expect(page.locator("#live-state")).to_have_text("live")
    page.remove_listener("websocket", listen)
    snapshots = [json.loads(f) for f in frames if '"type":"snapshot"' in f]
    before = [p for p in snapshots[0]["chart"] if queued_at <= p[0] < opened_at]
    assert len(before) >= 2
    assert all(queued >= 7 for _, queued, *_ in before)


def test_a_focused_row_that_empties_stays_until_the_focus_leaves_the_tree(
    page: Page, traffic: Traffic, server: DaphneProcess
) -> None:
    page.goto("/?projection=tenant-first")
    expect(page.locator("#live-state")).to_have_text("live")
    page.mouse.move(5, 5)  # no pointer over the tree: only the focus holds it
    blinking = traffic.another_frontend(server.issue_token("frontend", "fe-blink"))
    traffic.enqueue("focus-a")
    traffic.enqueue("focus-b", via=blinking)
    traffic.enqueue("focus-c")
    # The enqueues are only sent: wait until the tree shows all three, or the
    # close below may be handled before focus-c's enqueue on its own socket.
    for name in ("focus-a", "focus-c"):
        expect(treeitem(page, f"{name}: 1 queued")).to_have_count(1)
    treeitem(page, "focus-b: 1 queued").focus()
    traffic.close(blinking)  # its pending request is cancelled: the queue empties
    # Held by the focus (tree_hold.js): the row stays, emptied, and keeps it.
    expect(treeitem(page, "focus-b: 0 queued")).to_be_focused()
    page.keyboard.press("ArrowUp")
    expect(treeitem(page, "focus-a: 1 queued")).to_be_focused()
    page.locator("#search").focus()  # the focus leaves the tree: the live rows return
    expect(treeitem(page, "focus-b")).to_have_count(0)
    traffic.enqueue("focus-a", count=30)  # deepest now: the row moves to the top
    expect(page.get_by_role("tree").get_by_role("treeitem").first).to_have_accessible_name(
        "focus-a: 31 queued (p0 31)"
    )


def test_a_page_past_the_end_shows_the_last_page(page: Page) -> None:
    page.goto("/?projection=tenant-first&page=7")
    expect(page.locator("#page-info")).to_have_text("page 1 of 1")  # as rendered
    expect(page.locator("#live-state")).to_have_text("live")
    expect(page).to_have_url(re.compile(r"[?&]page=0(&|$)"))
    expect(page.locator("#page-info")).to_have_text("page 1 of 1")
    expect(page.locator("#prev-page")).to_be_disabled()


def test_a_search_that_matches_no_tenant_says_so(page: Page, traffic: Traffic) -> None:
    traffic.enqueue("searched")  # a tenant to list again once the search is cleared
    page.goto("/")
    empty = page.locator("#tree-empty")
    page.locator("#search").fill("zzz")
    expect(empty).to_have_text("No tenant matches “zzz”.")
    expect(empty).to_be_visible()
    page.locator("#search").fill("")
    expect(empty).to_be_hidden()
    page.goto("/?projection=tenant-first&search=zzz")
    expect(empty).to_have_text("No tenant matches “zzz”.")  # as rendered, and kept live
    expect(page.locator("#live-state")).to_have_text("live")
    expect(empty).to_have_text("No tenant matches “zzz”.")


def test_the_scheduler_loop_card_shows_its_share_of_a_core_and_its_cpu_per_query(
    page: Page, traffic: Traffic
) -> None:
    page.goto("/")
    busy, cost = page.locator("#f-load"), page.locator("#f-load-cost")
    expect(busy).to_have_text(re.compile(r"^\d{1,3}%$"))  # sampled twice a second from start-up
    lag = rf"^the loop's worst delay over the last \d+ s: {DURATION[1:]}"
    expect(busy).to_have_attribute("title", re.compile(lag))  # one replica: none named
    querier = traffic.querier("q-load", latency=lambda _: 0.0)
    try:
        traffic.enqueue("load", count=60)
        # Shown once a second or more was dispatched over the last ten seconds.
        expect(cost).to_have_text(re.compile(r"^\d+(\.\d+)?(ms|µs)/query$"), timeout=5_000)
    finally:
        traffic.close(querier)
    assert "Scheduler loop" in (page.locator("#fig-load .k").first.text_content() or "")


def test_waits_are_spelled_alike_by_the_page_and_the_server_and_never_negative(
    page: Page,
) -> None:
    page.goto("/")
    # The server renders the first frame, the script every later one: an
    # accessible name must not change spelling on the first update.
    values = [
        -3.0,
        -0.04,
        0,
        0.05,
        0.3,
        9.96,
        12.34,
        59.96,
        60,
        61.5,
        3599,
        3600,
        7322.5,
        172_809,
        604_800,
        604_860,
        1e30,
    ]
    spelled = page.evaluate(
        "async (xs) => { const m = await import('/static/dashboard/format.js');"
        " return xs.map((x) => m.formatWait(x)); }",
        values,
    )
    assert spelled == [format_wait(v) for v in values]
    assert spelled[:2] == ["0s", "0s"]


def test_clients_text_is_written_out_and_isolated_alike_by_the_page_and_the_server(
    page: Page,
) -> None:
    page.goto("/")
    # Bidi controls, a zero-width space, a C0 and a C1 control, a filler, a
    # line separator, tab and newline (kept), right-to-left letters.
    texts = ["plain-id", "a\u202eb", "x\u2066y\u2069", "zw\u200bsp", "c\x07d\x85", "\u3164",
             "l\u2028m", "tab\there\nnl", "\u05e9\u05dc\u05d5\u05dd-7", "\U0001f600"]  # fmt: skip
    spelled = page.evaluate(
        "async (xs) => { const m = await import('/static/dashboard/format.js');"
        " return xs.map((x) => [m.visible(x), m.iso(x)]); }",
        texts,
    )
    assert spelled == [[visible(t), iso(t)] for t in texts]
    assert spelled[1] == ["a⟨U+202E⟩b", "a⟨U+202E⟩b"]
    assert spelled[8][1] == "\u2068\u05e9\u05dc\u05d5\u05dd-7\u2069"
