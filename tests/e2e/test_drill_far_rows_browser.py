"""Rows far down the drill-down's list, in Chromium: never shown or read with old texts.

The list rewrites only the rows in or near its view (drill_list.js); one far
off keeps the place and wait it was last given. A jump to it (End) must not
paint those for a frame, and a screen reader must not read them meanwhile.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic, one_rule, put_tenant
from tests.e2e.drill_pages import cancel_matching, open_drill

TENANT = "farrows"

# Every frame for a second from now: the rows in the list's view whose place
# is painted (not hidden as stale) but is not their place in the list.
WATCH_FRAMES = """() => {
  const list = document.getElementById("drill-rows");
  window.wrongInView = [];
  window.framesSeen = 0;
  const check = () => {
    const top = list.getBoundingClientRect().top, bottom = top + list.clientHeight;
    [...list.children].forEach((li, i) => {
      const box = li.getBoundingClientRect();
      if (box.bottom <= top || box.top >= bottom) return;
      const pos = li.querySelector(".pos");
      if (getComputedStyle(pos).visibility === "hidden") return;
      const [key, shown, place] = [li.dataset.key, pos.textContent, String(i + 1)];
      if (shown !== place) window.wrongInView.push([key, shown, place]);
    });
    if (++window.framesSeen < 60) requestAnimationFrame(check);
  };
  requestAnimationFrame(check);
}"""
# How far below the top of the list's view a row starts, in heights of that view.
VIEWS_BELOW = """(li) => { const list = li.parentElement, top = list.getBoundingClientRect().top;
  return (li.getBoundingClientRect().top - top) / list.clientHeight; }"""
# How many rows hold a place that is not theirs (painted or not).
WRONG_PLACES = """() => [...document.getElementById("drill-rows").children]
  .filter((li, i) => li.querySelector(".pos").textContent !== String(i + 1)).length"""


@pytest.fixture(scope="module", autouse=True)
def _queued(server: DaphneProcess, traffic: Traffic) -> None:
    """60 requests of farrows, job-000 to job-059 in that order; nothing serves them."""
    put_tenant(
        server, TENANT, {**one_rule("no-such-job"), "max_outstanding_requests_per_tenant": 100}
    )
    for i in range(60):
        traffic.enqueue(TENANT, f'up{{job="job-{i:03d}"}}')


def end_from_the_first_row(rows: Locator) -> None:
    """End pressed with the focus on the first row's Explain (the list holds from then on)."""
    rows.first.get_by_role("button", name="Explain", exact=False).focus()
    rows.page.keyboard.press("End")


def test_a_jump_far_down_the_rows_shows_their_places_from_the_first_frame(
    page: Page, server: DaphneProcess
) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    open_drill(page, TENANT)
    rows = page.locator("#drill-rows > li")
    count = page.locator("#drill-count")
    expect(count).to_have_text("50 of 60")
    # A focus far down jumps there at once, as Back to a far row does; End
    # scrolls (smoothly, in Chromium: the observer's margin may catch the
    # rows on the way).
    far = rows.last.get_by_role("button", name="Explain", exact=False)
    jumps = [
        ("job-00", "50 of 50", far.focus),
        ("job-01", "40 of 40", lambda: end_from_the_first_row(rows)),
    ]
    for search, listed, jump in jumps:
        # Back at the top, with the focus and pointer off the list: held, it
        # would keep the rows that leave in their places (drill_list.js).
        page.locator("#drill-rows").evaluate("list => { list.scrollTop = 0; }")
        page.locator("#drill-search").focus()
        page.mouse.move(5, 5)
        expect(rows.first).to_be_in_viewport()
        # Ten requests at the head leave: every row below moves up ten places,
        # and the far ones, not rewritten, hold their old places.
        assert cancel_matching(server, TENANT, f'"{search}') == 10
        expect(count).to_have_text(listed)
        assert page.evaluate(WRONG_PLACES) > 0
        page.evaluate(WATCH_FRAMES)
        jump()
        page.wait_for_function("() => window.framesSeen >= 60")
        assert page.evaluate("() => window.wrongInView") == []
        expect(rows.last).to_be_in_viewport()
        expect(rows.last.locator(".pos")).to_have_text(listed.split()[0])


def test_a_far_row_s_old_wait_is_not_in_the_accessibility_tree_until_rewritten(
    page: Page,
) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    open_drill(page, TENANT)
    rows = page.locator("#drill-rows > li")
    expect(page.locator("#drill-count")).to_have_text(re.compile(r"^(\d+) of \1$"))
    first, far = rows.first.locator(".wait"), rows.last
    assert far.evaluate(VIEWS_BELOW) > 2  # past the list's height of margin below its view
    for _ in range(2):  # the waits in view tick on; the far row's stays as it was drawn
        expect(first).not_to_have_text(first.text_content() or "")
    old = far.locator(".wait").text_content() or ""
    assert old.startswith("waiting ")
    assert old not in far.aria_snapshot()  # an old wait is never read
    assert far.get_by_role(
        "button", name="Explain", exact=False
    ).is_enabled()  # the row is reachable

    far.scroll_into_view_if_needed()
    expect(far.locator(".wait")).not_to_have_text(old)
    now = far.locator(".wait").text_content() or ""
    assert now in far.aria_snapshot()
