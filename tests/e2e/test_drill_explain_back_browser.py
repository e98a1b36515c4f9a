"""The browser's Back from a request's explain box to the drill-down it came from, in Chromium.

The panel comes back as it was left: the node, its filter boxes, the rows
opened, the scroll, and the keyboard on the Explain button pressed. A
reload opens the inspector as always.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic, one_rule, put_tenant
from tests.e2e.drill_pages import open_drill

TENANT = "backer"


@pytest.fixture(scope="module", autouse=True)
def _queued(server: DaphneProcess, traffic: Traffic) -> None:
    """backer's requests, two of which hold "needle"; nothing serves them."""
    put_tenant(server, TENANT, one_rule("needle"))
    traffic.enqueue(TENANT, "count(up)", count=3)
    traffic.enqueue(TENANT, 'sum(rate(needle_total{job="a"}[5m]))')
    traffic.enqueue(TENANT, 'max(needle_total{job="b"})')


def test_back_from_the_explain_box_reopens_the_drill_down_as_it_was_left(page: Page) -> None:
    page.set_viewport_size({"width": 1280, "height": 700})
    open_drill(page, TENANT)
    page.locator("#drill-search").fill("needle")
    page.get_by_label("State").select_option("queued")
    rows = page.locator("#drill-rows > li")
    expect(rows).to_have_count(2)
    first, second = rows.nth(0), rows.nth(1)
    kept_query = second.locator(".q").inner_text()
    second.get_by_role("button", name=re.compile("^Show the full query")).click()
    expect(second.locator(".query-text")).to_be_visible()
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    scrolled = page.evaluate("window.scrollY")
    assert scrolled > 0, "the page is too short to show its scroll coming back"

    first.get_by_role("button", name=re.compile("^Explain ")).click()
    expect(page).to_have_url(re.compile(rf"/tenants/{TENANT}/#explain\?"))
    expect(page.locator("#explain-priority")).to_have_text("5")
    page.go_back()

    expect(page).to_have_url(re.compile(r"/(\?.*)?$"))
    expect(page.locator("#drill")).to_be_visible()
    expect(page.locator("#drill-title")).to_have_text(
        f"Queued requests of tenant {TENANT} whose query contains “needle”"
    )
    expect(page.locator("#drill-search")).to_have_value("needle")
    expect(page.get_by_label("State")).to_have_value("queued")
    expect(rows).to_have_count(2)
    opened = rows.filter(has_text=kept_query)
    expect(opened.locator(".query-text")).to_be_visible()
    expect(opened.locator(".expand")).to_have_attribute("aria-expanded", "true")
    expect(rows.nth(0).get_by_role("button", name=re.compile("^Explain "))).to_be_focused()
    assert abs(page.evaluate("window.scrollY") - scrolled) <= 2

    # A reload is a fresh look at the queue: no panel left over.
    page.reload()
    expect(page.locator("#live-state")).to_have_text("live")
    expect(page.locator("#drill")).to_be_hidden()


def test_back_at_400_px_reopens_it_too(page: Page) -> None:
    page.set_viewport_size({"width": 400, "height": 800})
    open_drill(page, TENANT)
    page.locator("#drill-search").fill("needle")
    rows = page.locator("#drill-rows > li")
    expect(rows).to_have_count(2)
    explain = rows.nth(1).get_by_role("button", name=re.compile("^Explain "))
    explain.focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(rf"/tenants/{TENANT}/#explain\?"))
    page.go_back()
    expect(page.locator("#drill-search")).to_have_value("needle")
    expect(rows).to_have_count(2)
    expect(rows.nth(1).get_by_role("button", name=re.compile("^Explain "))).to_be_focused()


def test_a_panel_closed_after_coming_back_stays_closed_on_a_later_back(page: Page) -> None:
    open_drill(page, TENANT)
    rows = page.locator("#drill-rows > li")
    expect(rows).to_have_count(5)
    rows.nth(0).get_by_role("button", name=re.compile("^Explain ")).click()
    expect(page).to_have_url(re.compile(rf"/tenants/{TENANT}/#explain\?"))
    page.go_back()
    expect(page.locator("#drill")).to_be_visible()
    page.locator("#drill-close").click()
    expect(page.locator("#drill")).to_be_hidden()
    page.goto("/tenants/")  # another way out of the inspector
    page.go_back()
    expect(page.locator("#live-state")).to_have_text("live")
    expect(page.locator("#drill")).to_be_hidden()
