"""History's compare picks in Chromium: kept across pages and filters, one pick refused in place.

The module's server gets 60 more tenants, so History has three pages of 25.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess

MANY = """
from api.store import services
for n in range(60):
    services.tenant_put(tenant_id=f"many-{n}", config={}, expected_version=None, author=None,
                        source="cli")
"""


@pytest.fixture(scope="module", autouse=True)
def _many_revisions(server: DaphneProcess) -> None:
    server.run_python(MANY)


def _version(row_text: str) -> str:
    found = re.match(r"#(\d+)", row_text)
    assert found is not None
    return found.group(1)


def test_a_from_picked_on_page_one_is_still_picked_on_page_two_and_compares(page: Page) -> None:
    page.goto("/history/")
    newest = page.locator(".revision").first
    newest_version = _version(newest.locator("header strong").inner_text())
    newest.get_by_label(re.compile("Compare from revision")).click()
    picked_from = page.locator('#compare-picked [data-pick="from"]')
    expect(picked_from).to_have_text(f"#{newest_version}")
    page.get_by_role("link", name="Next ›").click()
    expect(page.locator(".pager")).to_contain_text("page 2 of 3")
    expect(picked_from).to_have_text(f"#{newest_version}")
    older = page.locator(".revision").first
    older_version = _version(older.locator("header strong").inner_text())
    older.get_by_label(re.compile("Compare to revision")).click()
    page.get_by_role("button", name="Compare selected").click()
    expect(page.locator("#compare-what")).to_contain_text(
        f"the state after #{older_version}"  # put in time order
    )
    expect(page.locator("#compare-what")).to_contain_text(
        f"against the state after #{newest_version}"
    )


def test_compare_with_one_pick_is_refused_at_the_button_without_leaving_history(
    page: Page,
) -> None:
    page.goto("/history/?page=2")
    page.locator(".revision").nth(3).get_by_label(re.compile("Compare to revision")).click()
    button = page.get_by_role("button", name="Compare selected")
    button.click()
    expect(page).to_have_url(re.compile(r"/history/\?"))
    problem = page.locator("#compare-problem")
    expect(problem).to_have_text(
        "Pick a From revision as well: the To stays picked as you page and filter."
    )
    expect(button).to_be_focused()
    page.get_by_role("link", name="‹ Previous").click()
    page.locator(".revision").first.get_by_label(re.compile("Compare from revision")).click()
    expect(problem).to_have_text("")
    button.click()
    expect(page.locator("#compare-what")).to_be_visible()


def test_filtering_keeps_the_pick_and_clear_picks_drops_it(page: Page) -> None:
    page.goto("/history/")
    first = page.locator(".revision").first
    version = _version(first.locator("header strong").inner_text())
    first.get_by_label(re.compile("Compare from revision")).click()
    page.get_by_label("Tenant", exact=True).fill("many-1")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"search=many-1"))
    picked_from = page.locator('#compare-picked [data-pick="from"]')
    expect(picked_from).to_have_text(f"#{version}")
    page.get_by_role("link", name="Side by side").click()
    expect(picked_from).to_have_text(f"#{version}")
    page.get_by_role("link", name="clear picks").click()
    expect(picked_from).to_have_text("none")
    expect(page).to_have_url(re.compile(r"search=many-1"))


def test_the_rollback_page_is_a_page_with_its_heading_not_a_dialog(page: Page) -> None:
    page.goto("/history/")
    page.locator(".revision").first.get_by_role("button", name=re.compile("Roll back")).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Roll back revision")
    expect(page.get_by_role("dialog")).to_have_count(0)
    expect(page.get_by_role("main")).to_be_visible()
