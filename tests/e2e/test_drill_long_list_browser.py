"""A drill-down on more requests than it lists, in Chromium.

At its cap it says how to reach the others. Only the rows in or near the
list's view have their live texts rewritten: one far off keeps its texts
until it is scrolled to, and is up to date as it comes. Back from a row's
explain box, the list comes back scrolled to the rows it showed, not to
the same pixels: requests above them that left the queue while the explain
box was open would otherwise put other rows there, and the Explain button
given back the focus out of sight.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic, one_rule, put_tenant
from tests.e2e.drill_pages import cancel_matching, open_drill

TENANT = "longlist"
# The row at the top of the list's view: its key, and how far above that top it starts.
TOP_ROW = """() => {
  const list = document.getElementById("drill-rows");
  const top = list.getBoundingClientRect().top;
  const li = [...list.children].find((el) => el.getBoundingClientRect().bottom > top + 1);
  return [li.dataset.key, Math.round(li.getBoundingClientRect().top - top)];
}"""


@pytest.fixture(scope="module", autouse=True)
def _queued(server: DaphneProcess, traffic: Traffic) -> None:
    """530 requests of longlist, job-000 to job-529 in that order; nothing serves them."""
    put_tenant(
        server, TENANT, {**one_rule("no-such-job"), "max_outstanding_requests_per_tenant": 600}
    )
    for i in range(530):
        traffic.enqueue(TENANT, f'up{{job="job-{i:03d}"}}')


# A row's wait as the list words it ("waiting 300ms", "waiting 2.3s", "waiting 2m5s"; format.js).
WAITING = re.compile(r"waiting (?:(\d+)ms|(\d+(?:\.\d+)?)s|(\d+)m(?:(\d+)s)?)")
# How far below the top of the list's view a row starts, in heights of that view.
VIEWS_BELOW = """(li) => { const list = li.parentElement, top = list.getBoundingClientRect().top;
  return (li.getBoundingClientRect().top - top) / list.clientHeight; }"""


def waited(text: str | None) -> Decimal:
    """The seconds a row's wait text says."""
    found = WAITING.fullmatch(text or "")
    assert found, text
    millis, seconds, minutes, and_seconds = (Decimal(part or 0) for part in found.groups())
    return millis / 1000 + seconds + minutes * 60 + and_seconds


def test_at_its_cap_the_list_says_how_to_reach_the_requests_past_it(page: Page) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    open_drill(page, TENANT)
    rows, more = page.locator("#drill-rows > li"), page.locator("#drill-more")
    capped = page.locator("#drill-capped")
    for listed in range(50, 500, 50):
        expect(page.locator("#drill-count")).to_have_text(f"{listed} of 530")
        expect(capped).to_be_hidden()
        more.click()
    expect(rows).to_have_count(500)
    expect(page.locator("#drill-count")).to_have_text("500 of 530")
    expect(more).to_be_hidden()
    expect(capped).to_have_text(
        "The panel lists at most 500 requests: narrow it with the boxes above to reach the others."
    )
    # Narrowed to fewer than it lists, nothing is past the cap.
    page.locator("#drill-search").fill('"job-1')
    expect(page.locator("#drill-count")).to_have_text("100 of 100")
    expect(capped).to_be_hidden()


def test_a_row_far_below_the_view_is_rewritten_only_once_scrolled_to(page: Page) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    open_drill(page, TENANT)
    rows = page.locator("#drill-rows > li")
    expect(rows).to_have_count(50)
    first, far = rows.first.locator(".wait"), rows.last.locator(".wait")
    assert rows.last.evaluate(VIEWS_BELOW) > 3
    stale = far.text_content()
    # The waits in view tick on (two changes: a second or more), the one far below does not.
    for _ in range(2):
        expect(first).not_to_have_text(first.text_content() or "")
    expect(far).to_have_text(stale or "")

    # Paused, nothing ticks and no frame comes: what brings the row up to date is its scroll.
    page.get_by_role("button", name="Pause").click()
    page.wait_for_timeout(500)  # a frame already on its way lands first
    frozen = first.text_content()
    rows.last.scroll_into_view_if_needed()
    expect(far).not_to_have_text(stale or "")
    # Its wait at the instant the others froze at: queued with them, within a second.
    assert waited(far.text_content()) > waited(stale)
    assert abs(waited(far.text_content()) - waited(frozen)) <= 1
    expect(first).to_have_text(frozen or "")


def test_back_after_requests_above_left_shows_the_same_rows_and_the_focus(
    page: Page, server: DaphneProcess
) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    open_drill(page, TENANT)
    rows = page.locator("#drill-rows > li")
    expect(rows).to_have_count(50)
    # job-030 in the middle of the list's view, wholly in it, so the click scrolls nothing.
    row = page.locator(f'#drill-rows > li[data-key="{rows.nth(30).get_attribute("data-key")}"]')
    row.evaluate("(li) => li.scrollIntoView({ block: 'center' })")
    top = page.evaluate(TOP_ROW)
    explain = row.get_by_role("button", name=re.compile("^Explain "))
    explain.click()
    expect(page).to_have_url(re.compile(rf"/tenants/{TENANT}/#explain\?"))
    # Meanwhile the first twenty requests (job-000 to job-019) leave the queue.
    assert sum(cancel_matching(server, TENANT, f'"job-0{d}') for d in (0, 1)) == 20
    page.go_back()

    expect(page.locator("#drill-count")).to_have_text("50 of 510")
    expect(explain).to_be_focused()
    expect(explain).to_be_in_viewport()
    assert page.evaluate(TOP_ROW) == top
