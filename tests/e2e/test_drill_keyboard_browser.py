"""The drill-down with the keyboard alone, in Chromium."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic
from tests.e2e.drill_pages import cancel_matching, treeitem


@pytest.fixture(scope="module", autouse=True)
def _keys_queued(traffic: Traffic) -> None:
    """Four tenants' queues, once for the module: keys-a holds two requests, the rest one."""
    traffic.enqueue("keys-a", "up", count=2)
    for tenant in ("keys-b", "keys-c", "keys-d"):
        traffic.enqueue(tenant, "up")


def test_a_drill_opened_from_the_keyboard_takes_the_focus_and_escape_gives_it_back(
    page: Page,
) -> None:
    page.goto("/")
    opener = page.get_by_role("button", name="Requests of keys-a", exact=True)
    expect(opener).to_be_visible()
    opener.focus()
    page.keyboard.press("Enter")
    title = page.locator("#drill-title")
    expect(page.locator("#drill-rows > li")).to_have_count(2)
    # On the panel, not left behind on the ≡ button up in the tree: the next
    # Tab goes on into the panel's own controls.
    expect(title).to_be_focused()
    expect(title).to_be_in_viewport()
    page.keyboard.press("Tab")
    expect(page.locator("#drill-close")).to_be_focused()
    page.keyboard.press("Tab")
    search = page.locator("#drill-search")
    expect(search).to_be_focused()
    # Escape in a search box holding text clears it, and only then closes the panel.
    page.keyboard.type("up")
    page.keyboard.press("Escape")
    expect(search).to_have_value("")
    expect(page.locator("#drill")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#drill")).to_be_hidden()
    expect(opener).to_be_focused()


def test_close_after_the_opener_s_tenant_emptied_gives_the_focus_to_the_tree(
    page: Page, traffic: Traffic, server: DaphneProcess
) -> None:
    traffic.enqueue("emptied-kb", "up")
    page.goto("/")
    opener = page.get_by_role("button", name="Requests of emptied-kb", exact=True)
    opener.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#drill-rows > li")).to_have_count(1)
    assert cancel_matching(server, "emptied-kb", "") == 1
    # Its tree row, and the ≡ button that opened the panel with it, are gone.
    expect(treeitem(page, "emptied-kb")).to_have_count(0)
    page.locator("#drill-close").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#drill")).to_be_hidden()
    # Not dropped on <body>: on the tree's tab stop, a row of another tenant.
    expect(page.locator('#tree [role="treeitem"][tabindex="0"]')).to_be_focused()


def test_escape_in_the_request_dialog_closes_only_the_dialog(page: Page) -> None:
    page.goto("/")
    page.get_by_role("button", name="Requests of keys-a", exact=True).click()
    rows = page.locator("#drill-rows > li")
    expect(rows).to_have_count(2)
    request = rows.first.get_attribute("data-id")
    page.evaluate("id => window.inspectorDrill.showRequest(id)", request)
    dialog = page.locator("#request-dialog")
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(page.locator("#drill")).to_be_visible()
    expect(page.locator("#drill-title")).to_have_text(re.compile("keys-a"))


def test_a_drill_opened_while_paused_says_its_list_comes_on_resume(page: Page) -> None:
    page.goto("/")
    page.get_by_role("button", name="Requests of keys-b", exact=True).click()
    expect(page.locator("#drill-count")).to_have_text("1 of 1")
    page.get_by_role("button", name="Pause").click()
    page.get_by_role("button", name="Requests of keys-a", exact=True).click()
    # Not keys-b's count, nor an empty panel with nothing said.
    expect(page.locator("#drill-count")).to_have_text("")
    expect(page.locator("#drill-note")).to_have_text(
        "Paused: these requests are listed when you resume."
    )
    page.get_by_role("button", name="Resume").click()
    expect(page.locator("#drill-count")).to_have_text("2 of 2")
    expect(page.locator("#drill-note")).to_contain_text("in the order the scheduler will dequeue")


def test_the_tree_is_one_tab_stop_its_focused_row_and_that_row_s_button(page: Page) -> None:
    page.goto("/")
    tree = page.locator("#tree")
    expect(tree.get_by_role("button", name=re.compile("^Requests of keys-"))).to_have_count(4)
    page.locator("#search").focus()
    page.keyboard.press("Tab")
    first = tree.locator(":scope > li").first
    expect(first).to_be_focused()
    page.keyboard.press("Tab")
    name = first.get_attribute("aria-label").split(":")[0]  # type: ignore[union-attr]
    expect(page.get_by_role("button", name=f"Requests of {name}", exact=True)).to_be_focused()
    # Then out of the tree, not on through the other rows' buttons.
    page.keyboard.press("Tab")
    expect(page.locator("#tree :focus")).to_have_count(0)
    expect(page.locator("body")).not_to_be_focused()
    # The arrow keys move the stop: Tab from the second row reaches its button.
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    expect(first).to_be_focused()
    page.keyboard.press("ArrowDown")
    second = tree.locator(":scope > li").nth(1)
    expect(second).to_be_focused()
    page.keyboard.press("Tab")
    name = second.get_attribute("aria-label").split(":")[0]  # type: ignore[union-attr]
    expect(page.get_by_role("button", name=f"Requests of {name}", exact=True)).to_be_focused()
