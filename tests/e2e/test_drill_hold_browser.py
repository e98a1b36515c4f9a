"""The drill-down's request list holds its rows under the pointer and the focus, in Chromium.

Requests of a busy tenant leave (dispatched) and arrive several times a
second: every frame moved the rows up, and the row under a resting pointer,
with its Cancel… button, was another request each tick. While the pointer is
over the list (or the focus is in it) the rows stay in their places, one
whose request left greyed and saying so; once both have left, the list
catches up.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Locator, Page, expect

from tests.e2e.conftest import Traffic
from tests.e2e.drill_pages import open_drill

ROWS = "#drill-rows > li"
# The keys of the rows under (x, y), sampled every 100 ms for `n` samples,
# with the frames the inspector applied meanwhile.
SAMPLE_UNDER_POINTER = """async ([x, y, n]) => {
  const from = window.inspectorClient.frames;
  const keys = [];
  for (let i = 0; i < n; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const row = document.elementFromPoint(x, y)?.closest('.drill-row');
    keys.push(row ? row.dataset.key : null);
  }
  return { keys, frames: window.inspectorClient.frames - from };
}"""


@contextmanager
def busy(traffic: Traffic, tenant: str, *, latency: float) -> Iterator[None]:
    """`tenant` with 40 queued requests, served one at a time every `latency`
    seconds while more arrive (it never empties: its tree row, above
    the panel, stays): its list loses rows at the top and gains them at the
    bottom."""
    traffic.enqueue(tenant, "sum(rate(busy_total[5m]))", count=40)
    stop = threading.Event()

    def arrivals() -> None:
        while not stop.wait(latency):
            traffic.enqueue(tenant, "sum(rate(busy_total[5m]))", count=4)

    with traffic.queriers(f"q-{tenant}", 1, workers=1, latency=lambda _: latency):
        thread = threading.Thread(target=arrivals, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=10)


def open_queued(page: Page, tenant: str) -> None:
    open_drill(page, tenant)
    asked = page.evaluate("window.inspectorClient.frames")
    page.locator("#drill-state").select_option("queued")
    # The list answers the state box (its first frame for it is drawn unheld).
    page.wait_for_function(f"() => window.inspectorClient.frames >= {asked} + 3")
    expect(page.locator(ROWS).nth(12)).to_be_attached()
    expect(page.locator(f"{ROWS}.running")).to_have_count(0)


def centre(locator: Locator) -> tuple[float, float]:
    box = locator.bounding_box()
    assert box is not None
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def test_the_row_under_a_resting_pointer_stays_the_same_request_while_requests_leave_and_arrive(
    page: Page, traffic: Traffic
) -> None:
    with busy(traffic, "busy-hold", latency=0.25):
        open_queued(page, "busy-hold")
        x, y = centre(page.locator(ROWS).nth(2).get_by_role("button", name="Cancel…"))
        page.mouse.move(x, y)
        sample = page.evaluate(SAMPLE_UNDER_POINTER, [x, y, 30])
        # Several ticks, each with requests gone and come: one request under the pointer.
        assert sample["frames"] >= 6, sample
        assert len(set(sample["keys"])) == 1, sample["keys"]
        assert sample["keys"][0] is not None
        # Dispatched at four a second, the third row's request has left: it says so, in place.
        held = page.locator(f'{ROWS}[data-key="{sample["keys"][0]}"]')
        expect(held).to_have_class(re.compile(r"\bleft\b"))
        expect(held.locator(".wait")).to_have_text("left the queue")
        # Its last facts stay, but not a state it is no longer in ("· queued").
        meta = held.locator(".meta-text")
        expect(meta).to_contain_text(" · ")
        expect(meta).not_to_have_text(re.compile(r"· (queued|on .* worker \S+)$"))
        # A held list says it is held, over the line above it (no row moves for it).
        expect(page.locator("#drill-held")).to_have_text("order held while the pointer is here")
        # A click on its Cancel… asks to cancel nothing: the request is gone.
        page.mouse.click(x, y)
        expect(page.locator("#cancel-dialog")).to_be_hidden()
        expect(page.locator("#drill-message")).to_have_text("That request has left the queue.")
        # The click left the focus on that button, which holds the list too.
        # Pointer and focus away from the list, it catches up: the requests
        # gone are gone, the places run from 1.
        page.mouse.move(5, 5)
        page.locator("#drill-search").focus()
        expect(page.locator(f"{ROWS}.left")).to_have_count(0, timeout=2_000)
        expect(held).to_have_count(0)
        expect(page.locator("#drill-held")).to_be_hidden()
        # Read over frames: a busy machine may show one drawn while a row left.
        page.wait_for_function(
            f"""() => Array.from(document.querySelectorAll('{ROWS} .pos'), (e) => e.textContent)
              .slice(0, 5).join() === '1,2,3,4,5'""",
            timeout=5_000,
        )


def test_cancel_on_a_held_row_asks_about_the_request_that_was_under_the_pointer(
    page: Page, traffic: Traffic
) -> None:
    with busy(traffic, "busy-aim", latency=0.5):
        open_queued(page, "busy-aim")
        aimed = page.locator(ROWS).nth(9)
        rid = aimed.get_attribute("data-id")
        x, y = centre(aimed.get_by_role("button", name="Cancel…"))
        page.mouse.move(x, y, steps=4)
        page.wait_for_timeout(1_500)  # an operator's aim: several frames, rows leaving above
        page.mouse.click(x, y)
        dialog = page.locator("#cancel-dialog")
        expect(dialog).to_be_visible()
        expect(page.locator("#cancel-text")).to_contain_text(f"{rid} of busy-aim")
        page.locator("#cancel-back").click()
        page.mouse.move(5, 5)


def test_focus_in_the_list_holds_it_too(page: Page, traffic: Traffic) -> None:
    with busy(traffic, "busy-focus", latency=0.25):
        open_queued(page, "busy-focus")
        button = page.locator(ROWS).nth(1).get_by_role("button", name="Explain")
        rid = page.locator(ROWS).nth(1).get_attribute("data-id")
        button.focus()
        page.mouse.move(5, 5)
        page.wait_for_timeout(1_500)  # six frames; the second row's request leaves within one
        expect(page.locator(ROWS).nth(1)).to_have_attribute("data-id", rid or "")
        expect(page.locator(ROWS).nth(1)).to_have_class(re.compile(r"\bleft\b"))
        assert page.evaluate("document.activeElement.textContent") == "Explain"
        # The focus leaves the list: it catches up.
        page.locator("#drill-search").focus()
        expect(page.locator(f"{ROWS}.left")).to_have_count(0, timeout=2_000)
