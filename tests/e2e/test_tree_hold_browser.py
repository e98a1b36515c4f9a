"""The queue tree holds its rows in place under the pointer and the focus, in Chromium.

Under churn (queues emptying and refilling several times a second) the live
order moved rows, and their ≡ buttons, from under the pointer: Playwright
could not click one in 30 s. While the pointer is over the tree (or a row has
the focus) the rows stay where they are, an emptied one greyed, the figures
live; once both have left, the tree shows the live order at once.
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic

CHURNING = [f"churn-{i}" for i in range(6)]
ROWS = "#tree > li"
QUEUED = 25
# Counts, from now on, the rows taken out of the tree (a move is one too),
# the rows put in and those put in above the second row (the hovered one).
LOG_ROW_CHANGES = """() => {
  const hovered = document.querySelectorAll('#tree > li')[1];
  const rows = (nodes) => [...nodes].filter((n) => n.getAttribute?.('role') === 'treeitem');
  const log = { removed: 0, above: 0, added: 0, from: window.inspectorClient.frames };
  window.holdLog = log;
  new MutationObserver((records) => {
    for (const r of records) {
      log.removed += rows(r.removedNodes).length;
      for (const row of rows(r.addedNodes)) {
        log.added += 1;
        const below = hovered.compareDocumentPosition(row) & Node.DOCUMENT_POSITION_FOLLOWING;
        if (!below) log.above += 1;
      }
    }
  }).observe(document.getElementById('tree'), { childList: true, subtree: true });
}"""


@contextmanager
def churn(traffic: Traffic, seed: int) -> Iterator[None]:
    """Bursts of enqueues at random tenants, served by fast queriers: queues empty and refill.

    More comes in than is served, up to about QUEUED in all: the tree always
    has rows, and their depths cross several times a second.
    """
    stop = threading.Event()
    rng = random.Random(seed)
    answered = len(traffic.replies)

    def bursts() -> None:
        sent = 0
        while not stop.wait(0.08):
            if sent - (len(traffic.replies) - answered) < QUEUED:
                count = rng.randint(1, 6)
                traffic.enqueue(rng.choice(CHURNING), count=count)
                sent += count

    # About 40 requests a second in, 30 served.
    with traffic.queriers("q-churn", 1, workers=3, latency=lambda _: 0.1):
        thread = threading.Thread(target=bursts, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=10)


@contextmanager
def churning_inspector(page: Page, traffic: Traffic, seed: int) -> Iterator[None]:
    """The inspector open on a churning queue (`churn`) that shows three rows at least."""
    open_inspector(page)
    with churn(traffic, seed):
        # A module's first churn waits for its queriers and first bursts.
        expect(page.locator(ROWS).nth(2)).to_be_attached(timeout=15_000)
        yield


def open_inspector(page: Page, search: str = "") -> None:
    page.goto(f"/?projection=tenant-first&search={search}")
    expect(page.locator("#live-state")).to_have_text("live")


def labels(page: Page) -> list[str]:
    return page.locator(ROWS).evaluate_all("rows => rows.map(r => r.getAttribute('aria-label'))")


def tenant_of(page: Page, row: int) -> str:
    return page.locator(ROWS).nth(row).get_attribute("aria-label").split(":")[0]  # type: ignore[union-attr]


def in_live_order(page: Page) -> bool:
    """Whether the top rows are in the server's order (deepest first, ties by name), none greyed."""
    rows = page.locator(ROWS).evaluate_all(
        "rows => rows.map(r => [r.classList.contains('gone'), r.dataset.key.slice(2),"
        " Number(r.querySelector(':scope > .row .count').textContent)])"
    )
    return not any(gone for gone, _, _ in rows) and rows == sorted(
        rows, key=lambda r: (-r[2], r[1])
    )


def move_away(page: Page) -> None:
    page.mouse.move(5, 5)


def test_a_row_s_button_is_clicked_at_once_while_queues_churn_under_the_pointer(
    page: Page, traffic: Traffic
) -> None:
    with churning_inspector(page, traffic, seed=1):
        page.locator(ROWS).first.hover()
        target = tenant_of(page, page.locator(ROWS).count() - 1)
        # The row farthest from the pointer: every row above it used to move.
        page.get_by_role("button", name=f"Requests of {target}", exact=True).click(timeout=3_000)
        expect(page.locator("#drill-title")).to_contain_text(target)
    move_away(page)


def test_a_click_lands_on_the_row_aimed_at_however_long_the_aim_takes(
    page: Page, traffic: Traffic
) -> None:
    with churning_inspector(page, traffic, seed=4):
        for row in (-1, 1, -1):
            # The drill-down opened by the last aim scrolled the page to itself.
            page.evaluate("window.scrollTo(0, 0)")
            page.locator(ROWS).first.hover()  # the pointer comes onto the tree, then aims
            # Named once, by its key: a held tree takes new tenants in at its end,
            # so `nth(-1)` looked up again for the box could be one that just came.
            key = page.locator(ROWS).nth(row).get_attribute("data-key")
            aimed = page.locator(f'{ROWS}[data-key="{key}"]')
            tenant = aimed.get_attribute("aria-label").split(":")[0]  # type: ignore[union-attr]
            box = aimed.locator(":scope > .row button.drill").bounding_box()
            assert box is not None
            x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
            page.mouse.move(x, y, steps=4)
            page.wait_for_timeout(400)  # an operator's aim: frames come every 250 ms
            page.mouse.click(x, y)
            expect(page.locator("#drill-title")).to_contain_text(f"tenant {tenant}")
            # Its first listing scrolls the page to the panel (revealRows): wait
            # for it, or that scroll moves the tree under the next aim.
            expect(page.locator("#drill-count")).to_have_text(re.compile(r"\d+ of "))
    move_away(page)


def test_while_the_pointer_is_over_the_tree_a_frame_moves_no_row_and_adds_none_above_it(
    page: Page, traffic: Traffic
) -> None:
    with churning_inspector(page, traffic, seed=5):
        page.locator(ROWS).nth(1).hover()
        page.evaluate(LOG_ROW_CHANGES)
        page.wait_for_function("() => window.inspectorClient.frames >= window.holdLog.from + 12")
        log = page.evaluate("window.holdLog")
    assert log["removed"] == 0
    assert log["above"] == 0
    move_away(page)


def test_once_the_pointer_leaves_the_tree_shows_the_live_order_at_once(
    page: Page, traffic: Traffic
) -> None:
    with churning_inspector(page, traffic, seed=2):
        hovered = page.locator(ROWS).first
        hovered.hover()
        key, top = hovered.get_attribute("data-key"), hovered.bounding_box()
    # The queriers are gone: whatever is queued now stays queued.
    traffic.enqueue("late-a", count=3)
    traffic.enqueue("late-b", count=40)
    # New rows join below the pointer, with their live counts; the hovered row stays put.
    late_b = page.locator('#tree > li[data-key="t:late-b"]')
    expect(late_b).to_have_attribute("aria-label", "late-b: 40 queued (p0 40)")
    expect(page.locator('#tree > li[data-key="t:late-a"]')).to_have_attribute(
        "aria-label", "late-a: 3 queued (p0 3)"
    )
    expect(hovered).to_have_attribute("data-key", key or "")
    assert hovered.bounding_box() == top
    # Paused, no frame comes: only the tree itself can catch up.
    page.evaluate("window.inspectorClient.pause()")
    move_away(page)
    expect(page.locator(ROWS).first).to_have_attribute(
        "aria-label", "late-b: 40 queued (p0 40)", timeout=1_000
    )
    assert in_live_order(page)
    page.evaluate("window.inspectorClient.resume()")


def test_a_long_hold_says_the_order_is_held_while_the_counts_stay_live(
    page: Page, traffic: Traffic
) -> None:
    hint = page.locator("#tree-held")
    with churning_inspector(page, traffic, seed=3):
        page.locator(ROWS).first.hover()
        expect(hint).to_be_visible(timeout=5_000)
        expect(hint).to_have_text(re.compile("^order held while the pointer is here"))
        before = labels(page)
        keys = page.locator(ROWS).evaluate_all("rows => rows.map(r => r.dataset.key)")
        page.wait_for_function(
            "([keys, before]) => { const rows = [...document.querySelectorAll('#tree > li')];"
            " return rows.slice(0, keys.length).every((r, i) => r.dataset.key === keys[i])"
            " && rows.some((r, i) => r.getAttribute('aria-label') !== before[i]); }",
            arg=[keys, before],
            timeout=5_000,
        )
        move_away(page)
        expect(hint).to_be_hidden(timeout=1_000)
        expect(hint).to_have_text("")


def test_a_held_row_whose_queue_emptied_still_opens_its_requests(
    page: Page, traffic: Traffic, server: DaphneProcess
) -> None:
    open_inspector(page, search="held-")
    leaving = traffic.another_frontend(server.issue_token("frontend", "fe-leaving"))
    traffic.enqueue("held-drained", count=2, via=leaving)
    traffic.enqueue("held-staying", count=5)
    staying = page.get_by_role("treeitem", name="held-staying: 5 queued")
    drained = page.locator('#tree > li[data-key="t:held-drained"]')
    expect(drained).to_have_attribute("aria-label", "held-drained: 2 queued (p0 2)")
    staying.hover()
    traffic.close(leaving)  # its requests are cancelled: the queue empties
    expect(drained).to_have_attribute("aria-label", "held-drained: 0 queued")
    expect(drained).to_have_class(re.compile(r"\bgone\b"))
    page.get_by_role("button", name="Requests of held-drained", exact=True).click()
    expect(page.locator("#drill-title")).to_contain_text("held-drained")
    expect(page.locator("#drill-count")).to_have_text("0 of 0")
    expect(page.locator("#drill-rows > li")).to_have_count(0)
    move_away(page)
    expect(drained).to_have_count(0)


def test_a_row_with_the_keyboard_focus_stays_in_place_until_the_focus_leaves_the_tree(
    page: Page, traffic: Traffic, server: DaphneProcess
) -> None:
    open_inspector(page, search="keys-")
    move_away(page)
    leaving = traffic.another_frontend(server.issue_token("frontend", "fe-keys"))
    traffic.enqueue("keys-first", count=8)
    traffic.enqueue("keys-gone", count=6, via=leaving)
    traffic.enqueue("keys-last", count=4)
    gone = page.locator('#tree > li[data-key="t:keys-gone"]')
    expect(page.get_by_role("treeitem", name="keys-last: 4 queued")).to_be_attached()
    page.locator("#search").focus()
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowDown")
    expect(gone).to_be_focused()
    traffic.close(leaving)
    traffic.enqueue("keys-last", count=30)  # the deepest now: live, it leads
    expect(page.get_by_role("treeitem", name="keys-last: 34 queued")).to_be_attached()
    assert [label.split(":")[0] for label in labels(page)][:3] == [
        "keys-first",
        "keys-gone",
        "keys-last",
    ]
    expect(gone).to_have_attribute("aria-label", "keys-gone: 0 queued")
    expect(gone).to_be_focused()
    page.keyboard.press("ArrowDown")  # the arrow keys move through the held rows
    expect(page.get_by_role("treeitem", name="keys-last: 34 queued")).to_be_focused()
    page.keyboard.press("Tab")  # onto the row's ≡ button: still in the tree, still held
    expect(gone).to_be_attached()
    page.keyboard.press("Tab")  # out of the tree
    expect(gone).to_have_count(0)
    expect(page.locator(ROWS).first).to_have_attribute("aria-label", "keys-last: 34 queued (p0 34)")


def test_a_search_typed_with_the_pointer_resting_on_the_tree_shows_only_its_rows(
    page: Page, traffic: Traffic
) -> None:
    open_inspector(page, search="typed-")
    traffic.enqueue("typed-kept", count=3)
    traffic.enqueue("typed-other", count=2)
    kept = page.get_by_role("treeitem", name="typed-kept: 3 queued")
    expect(page.get_by_role("treeitem", name="typed-other: 2 queued")).to_be_attached()
    kept.hover()  # the pointer stays there while the operator types
    page.locator("#search").fill("typed-kept")
    # Asked for other rows, the tree drops the old ones rather than hold them greyed.
    expect(page.locator('#tree > li[data-key="t:typed-other"]')).to_have_count(0)
    expect(kept).to_be_attached()
