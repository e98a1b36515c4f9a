"""Leaving the tenant editor with an unsaved draft asks first, in Chromium.

The page asks (the browser's beforeunload dialog) while the form or the
YAML text differs from what it was loaded with, and not when the draft
goes on purpose: saved, discarded, or taken to Simulate.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import go_to_history, one_rule, put_tenant

REGEX = "query_priority.priorities[0].query_attributes[0].regex"


@pytest.fixture(scope="module")
def leave(server: DaphneProcess) -> str:
    put_tenant(server, "leave", one_rule("^never$"))
    return "leave"


def test_back_from_simulate_the_draft_still_asks_before_leaving(
    page: Page, leave: str, asked: list[str]
) -> None:
    page.goto(f"/tenants/{leave}/")
    box = page.locator(f'[name="{REGEX}"]')
    box.fill("special")
    page.get_by_role("button", name="Simulate this change").click()
    expect(page).to_have_url(re.compile(r"/simulate/"))
    # Back to the editor as it was left (the browser's page cache): the
    # submit that took the draft to Simulate no longer counts as leaving.
    page.go_back()
    expect(box).to_have_value("special")
    assert page.evaluate("performance.getEntriesByType('navigation')[0].type") == "back_forward"
    go_to_history(page)
    assert asked == ["beforeunload"]
    expect(page).to_have_url(re.compile(r"/tenants/leave/$"))


def test_a_form_edit_undone_leaves_without_asking(page: Page, leave: str, asked: list[str]) -> None:
    page.goto(f"/tenants/{leave}/")
    box = page.locator(f'[name="{REGEX}"]')
    box.fill("special")
    go_to_history(page)
    assert asked == ["beforeunload"]
    box.fill("^never$")
    go_to_history(page)
    expect(page).to_have_url(re.compile(r"/history/"))
    assert asked == ["beforeunload"]


def test_the_change_note_and_the_explain_box_are_not_a_draft(
    page: Page, leave: str, asked: list[str]
) -> None:
    page.goto(f"/tenants/{leave}/")
    page.get_by_role("textbox", name="Change note").fill("not an edit")
    page.locator("#explain_query").fill("up")
    go_to_history(page)
    expect(page).to_have_url(re.compile(r"/history/"))
    assert asked == []


def test_discarding_or_simulating_a_draft_leaves_without_asking(
    page: Page, leave: str, asked: list[str]
) -> None:
    page.goto(f"/tenants/{leave}/")
    page.locator(f'[name="{REGEX}"]').fill("special")
    page.get_by_role("link", name="Discard changes").click()
    expect(page.locator(f'[name="{REGEX}"]')).to_have_value("^never$")
    page.locator(f'[name="{REGEX}"]').fill("special")
    page.get_by_role("button", name="Simulate this change").click()
    expect(page).to_have_url(re.compile(r"/simulate/"))
    # The draft went with it: Simulate proposes the unsaved regex.
    expect(page.locator("#sim-origin")).to_have_text(
        "Proposal carried from the unsaved editor of tenant leave."
    )
    expect(page.locator("#sim-proposed")).to_have_value(re.compile(r"regex.+special"))
    assert asked == []
