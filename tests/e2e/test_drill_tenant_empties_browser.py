"""The drill-down keeps its place when its tenant's queue empties, in Chromium.

The panel sits at the foot of the inspector, most often scrolled to the
bottom. When the drilled tenant's requests all left, its list collapsed,
the page got shorter and the browser scrolled it back: the panel, with
its filter boxes and Close under the pointer, jumped down the window
(485 px at 12 rows in a 900 px window). It keeps its height now, says the
tenant's queue is empty, and fills again as requests arrive.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic
from tests.e2e.drill_pages import cancel_matching, open_drill, treeitem

ROWS = "#drill-rows > li"
CONTROLS = [
    "drill-title",
    "drill-close",
    "drill-search",
    "drill-regex",
    "drill-actor",
    "drill-state",
    "drill-priority",
    "drill-min-wait",
    "drill-cancel-all",
]
# Every control's box in the window, read at one instant.
BOXES = """(ids) => Object.fromEntries(ids.map((id) => {
  const r = document.getElementById(id).getBoundingClientRect();
  return [id, [r.x, r.y, r.width, r.height]];
}))"""
EMPTY = (
    "Tenant fades has nothing queued or running now. "
    "The panel stays on it: its requests are listed here as they arrive."
)


def frames_later(page: Page, n: int) -> None:
    """Until the inspector has applied `n` more frames (each may change the panel)."""
    asked = page.evaluate("window.inspectorClient.frames")
    page.wait_for_function(f"() => window.inspectorClient.frames >= {asked} + {n}")


def boxes(page: Page) -> dict[str, Any]:
    return page.evaluate(BOXES, CONTROLS)  # type: ignore[no-any-return]


def test_the_panel_keeps_its_place_and_says_so_when_its_tenant_s_queue_empties(
    page: Page, traffic: Traffic, server: DaphneProcess
) -> None:
    page.set_viewport_size({"width": 1500, "height": 900})
    traffic.enqueue("fades", "sum(rate(fading_total[5m]))", count=12)
    traffic.enqueue("stays", "up", count=3)  # the tree keeps a tenant
    open_drill(page, "fades")
    expect(page.locator(ROWS)).to_have_count(12)
    frames_later(page, 2)  # scrolled into view with its rows in (drill.js revealRows)
    state = page.locator("#drill-state")
    state.hover()  # the pointer on a control, not on the list (which would hold its rows)
    before = boxes(page)
    scrolled = page.evaluate("window.scrollY")
    assert scrolled > 0, "the panel is at the foot of a page scrolled down to it"

    assert cancel_matching(server, "fades", "") == 12
    expect(page.locator(ROWS)).to_have_count(0)
    empty = page.locator("#drill-empty")
    expect(empty).to_have_text(EMPTY)
    expect(empty).to_be_visible()
    # Read out when it appears: a polite live region, emptied while hidden
    # (below) so that its text arrives, and is announced, as it shows.
    expect(empty).to_have_attribute("role", "status")
    expect(treeitem(page, "fades")).to_have_count(0)  # its tree row is gone
    frames_later(page, 2)
    assert boxes(page) == before
    assert page.evaluate("window.scrollY") == scrolled
    # The message is where the rows were, in the window, under the controls.
    message = empty.bounding_box()
    assert message is not None and before["drill-state"][1] < message["y"] < 900
    # What is under the pointer is still the control it rested on.
    x, y, width, height = before["drill-state"]
    under = f"document.elementFromPoint({x + width / 2}, {y + height / 2})?.id"
    assert page.evaluate(under) == "drill-state"
    expect(page.locator("#drill-count")).to_have_text("0 of 0")

    # The drill stays on the tenant: its next requests are listed as they arrive.
    traffic.enqueue("fades", "count(refilled)", count=2)
    expect(page.locator(ROWS)).to_have_count(2)
    expect(page.locator(f"{ROWS} .q").first).to_have_text("count(refilled)")
    expect(empty).to_be_hidden()
    expect(empty).to_have_text("")
    expect(page.locator("#drill-title")).to_have_text("Requests of tenant fades")
    assert boxes(page) == before


def test_emptied_under_a_search_the_panel_keeps_its_place_and_says_no_request_matches(
    page: Page, traffic: Traffic, server: DaphneProcess
) -> None:
    page.set_viewport_size({"width": 1500, "height": 900})
    traffic.enqueue("sought", "sum(rate(sought_total[5m]))", count=12)
    open_drill(page, "sought")
    page.locator("#drill-search").fill("sought_total")
    expect(page.locator("#drill-title")).to_contain_text("whose query contains")
    expect(page.locator(ROWS)).to_have_count(12)
    frames_later(page, 2)  # the frame answering the search set the panel's height
    page.locator("#drill-state").hover()  # off the list, which would hold its rows
    before = boxes(page)
    assert cancel_matching(server, "sought", "") == 12
    expect(page.locator(ROWS)).to_have_count(0)
    # Under a search, an empty list says only that none matches: requests
    # the search leaves out may still be queued.
    expect(page.locator("#drill-empty")).to_have_text("No request matches.")
    frames_later(page, 2)
    assert boxes(page) == before


def test_rows_the_operator_asks_for_set_the_panel_s_height_afresh(
    page: Page, traffic: Traffic
) -> None:
    page.set_viewport_size({"width": 1500, "height": 900})
    traffic.enqueue("narrowed", "sum(rate(narrowed_total[5m]))", count=12)
    traffic.enqueue("narrowed", "count(one_of_them)")
    open_drill(page, "narrowed")
    expect(page.locator(ROWS)).to_have_count(13)
    frames_later(page, 2)
    tall = page.locator("#drill").bounding_box()
    # The search is the operator's own: the one row it lists is not held
    # at the height of the thirteen, as the list does not hold its rows.
    page.locator("#drill-search").fill("one_of_them")
    expect(page.locator(ROWS)).to_have_count(1)
    frames_later(page, 2)
    short = page.locator("#drill").bounding_box()
    assert tall is not None and short is not None
    assert short["height"] < tall["height"] - 200
