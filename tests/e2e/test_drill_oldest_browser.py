"""The oldest queued request and re-queued ones in the drill-down, in Chromium.

The story: acme's four requests (tests/e2e/drill_pages.py), each handed to a
querier that then left (`requeued`), then a fifth that its rule puts first
(`never_queued`).
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import Traffic
from tests.e2e.drill_pages import (  # noqa: F401 - queue_acme is the fixture acme_queued
    open_drill,
    queue_acme,
    treeitem,
)


@pytest.fixture(scope="module")
def requeued(acme_queued: None, page: Page, traffic: Traffic) -> None:
    """acme's four requests, each handed to a querier that then left: back in the queue."""
    page.goto("/")
    querier = traffic.querier("q-left", workers=4, latency=lambda _: 30.0)
    try:
        expect(page.locator('[data-querier="q-left"]')).to_contain_text("4/4 busy")
    finally:
        traffic.close(querier)
    expect(treeitem(page, "acme: 4 queued")).to_be_visible()


@pytest.fixture(scope="module")
def never_queued(requeued: None, traffic: Traffic) -> None:
    """A fifth request of acme's, "never", which its rule puts at priority 5: before the rest."""
    traffic.enqueue("acme", "never")


@pytest.mark.usefixtures("requeued")
def test_a_request_re_queued_after_its_querier_disconnected_says_so(page: Page) -> None:
    open_drill(page, "acme")
    rows = page.locator("#drill-rows > li")
    expect(rows).to_have_count(4)
    for i in range(4):
        expect(rows.nth(i).locator(".meta")).to_contain_text(
            "re-queued after its querier disconnected (attempt 2 next)"
        )


@pytest.mark.usefixtures("never_queued")
def test_the_oldest_request_link_opens_its_queue_on_that_request_marked_and_focused(
    page: Page,
) -> None:
    # Back from the querier that left, acme's requests each went to the front
    # (the oldest last); the priority 5 one goes before them all.
    page.goto("/")
    link = page.locator("#oldest-link")
    expect(link).to_have_text("acme / ingester")
    link.click()
    expect(page.locator("#drill-title")).to_have_text("Requests of tenant acme / ingester")
    rows, marked = page.locator("#drill-rows > li"), page.locator("#drill-rows > li.oldest")
    expect(rows).to_have_count(5)
    expect(rows.first.locator(".q")).to_have_text("never")
    expect(marked).to_have_count(1)
    # The first request of the session (its frontend's id 1), wherever it is listed.
    expect(marked.locator(".meta")).to_contain_text(re.compile(r"· id 1 ·"))
    expect(marked.locator(".oldest-tag")).to_have_text("oldest")
    expect(marked).to_be_focused()
    expect(marked).to_be_in_viewport(ratio=1)


@pytest.mark.usefixtures("never_queued")
def test_the_oldest_mark_follows_the_queue_to_the_next_oldest_or_none(
    page: Page, traffic: Traffic
) -> None:
    page.goto("/")
    page.locator("#oldest-link").click()
    rows, marked = page.locator("#drill-rows > li"), page.locator("#drill-rows > li.oldest")
    expect(marked.locator(".meta")).to_contain_text(re.compile(r"· id 1 ·"))
    marked.get_by_role("button", name="Cancel…").click()
    page.locator("#cancel-confirm").click()
    expect(page.locator("#drill-message")).to_contain_text("Cancelled")
    # Pointer and focus off the list, which then stops holding the cancelled row.
    page.mouse.move(5, 5)
    page.locator("#drill-search").focus()
    expect(rows).to_have_count(4)
    expect(marked.locator(".meta")).to_contain_text(re.compile(r"· id 2 ·"))
    running = page.locator("#drill-rows > li.running")
    querier = traffic.querier("q-all", workers=4, latency=lambda _: 30.0)
    try:
        expect(running).to_have_count(4)
        retried = running.filter(has_text="count(up)").locator(".meta")
        expect(retried).to_contain_text("attempt 2: a retry after a querier disconnected")
        first_run = running.filter(has_text="never").locator(".meta")
        expect(first_run).not_to_contain_text("attempt")
        expect(marked).to_have_count(0)  # a running request is not queued
    finally:
        traffic.close(querier)
    # Only the one on its first attempt comes back; the retried ones failed.
    expect(rows).to_have_count(1)
    expect(marked.locator(".q")).to_have_text("never")
