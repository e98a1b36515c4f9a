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
    expect(count).to_have_text(
        re.compile(rf"^{NEEDLES} of {NEEDLES} \(counted at \d\d:\d\d:\d\d UTC\S*\)$"),
        timeout=15_000,
    )
    expect(page.locator("#drill-note")).to_contain_text(
        "Searching query text is spread over several ticks: the count is the last one finished"
    )
    expect(page.locator("#drill-rows > li")).to_have_count(NEEDLES)
    # The longer count line and note still fit a phone-sized window.
    over, wide = no_horizontal_scroll(page, 400)
    assert over <= 0, f"400px window: {over}px wider: {wide}"
    page.set_viewport_size({"width": 1500, "height": 1000})
