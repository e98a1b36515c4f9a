"""Rolling back from History with a change note, from the keyboard, in Chromium."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import one_rule, put_tenant

TENANT = "noted"


def test_a_rollback_s_note_is_typed_on_its_confirmation_and_shown_on_history(
    page: Page, server: DaphneProcess
) -> None:
    put_tenant(server, TENANT, one_rule("first"))
    put_tenant(server, TENANT, one_rule("second"), replace=True)
    page.goto(f"/history/?key={TENANT}")
    latest = page.get_by_role("button", name=re.compile(r"^Roll back revision \d+$")).first
    version = (latest.get_attribute("aria-label") or "").rsplit(" ", 1)[-1]
    latest.click()
    expect(page.get_by_role("button", name=f"Roll back #{version}")).to_be_focused()
    note = page.get_by_label("Change note (optional)")
    # Shift+Tab from the focused button reaches the note; Enter there confirms.
    page.keyboard.press("Shift+Tab")
    expect(note).to_be_focused()
    page.keyboard.type("second broke the dashboards")
    page.keyboard.press("Enter")
    expect(page.locator(".messages")).to_contain_text("Rolled back: new revision")
    expect(page.locator("main")).to_contain_text(
        f"rollback of revision #{version}: second broke the dashboards"
    )
