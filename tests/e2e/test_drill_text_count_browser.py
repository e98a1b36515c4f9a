"""A drill's text search over more query text than one tick may read, in Chromium:
its count is finished over several ticks, and the panel says when."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import Traffic
from tests.e2e.drill_pages import no_horizontal_scroll

# 100 requests (a tenant's default limit) of about 256 KB each: some 51,000
# text units (dashboard/drill_scan.py), twice a tick's 25,000, so no single
# tick can count them all.
PADDING = "a" * 256 * 1024
NEEDLES = 3


# Counts the changes of the drill's count line from now on; returns the
# expression that reads the count.
WATCH_COUNT_LINE = """() => {
  window.countLineChanges = 0;
  new MutationObserver(() => { window.countLineChanges += 1; })
    .observe(document.getElementById("drill-count"),
      { childList: true, characterData: true, subtree: true });
  return "window.countLineChanges";
}"""


@pytest.fixture(scope="module", autouse=True)
def _long_queries(traffic: Traffic) -> None:
    """Tenant long's 100 requests; the first three hold "needle"."""
    for i in range(100):
        kind = "needle" if i < NEEDLES else "hay"
        traffic.enqueue("long", f'up{{job="{kind}-{i}", pad="{PADDING}"}}')


def test_a_search_counted_over_several_ticks_says_when_its_count_finished(page: Page) -> None:
    page.goto("/")
    page.get_by_role("button", name="Requests of long", exact=True).click()
    count = page.locator("#drill-count")
    expect(count).to_have_text(re.compile(r"^\d+ of (at least )?100"))
    page.locator("#drill-search").fill("needle")
    expect(count).to_have_text(f"{NEEDLES} of {NEEDLES} (last full count)", timeout=15_000)
    expect(page.locator("#drill-note")).to_contain_text(
        re.compile(
            r"Searching query text is spread over several ticks: the count is the last one "
            r"finished, at \d\d:\d\d:\d\d UTC\S*, and is counted again"
        )
    )
    # Counted again every few ticks: the note's time moves on, the live count
    # line (read out on each change) stays as it was.
    note = page.locator("#drill-note")
    counted_first = note.inner_text()
    changes = page.evaluate(WATCH_COUNT_LINE)
    expect(note).not_to_have_text(counted_first, timeout=30_000)
    assert page.evaluate(changes) == 0
    expect(page.locator("#drill-rows > li")).to_have_count(NEEDLES)
    # The longer count line and note still fit a phone-sized window.
    over, wide = no_horizontal_scroll(page, 400)
    assert over <= 0, f"400px window: {over}px wider: {wide}"
    page.set_viewport_size({"width": 1500, "height": 1000})
