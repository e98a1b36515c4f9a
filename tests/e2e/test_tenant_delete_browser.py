"""Deleting a tenant from its editor, and Back after a save, in Chromium.

One server, browser and login for the module; the tests run in file order:
the delete dialog opened and cancelled by keyboard, a stale delete refused,
acme deleted and its deletion rolled back from History, then gold saved and
its review confirmed again from the browser's Back.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess

MAX_QUERIERS = "max_queriers_per_tenant"


def test_delete_opens_a_dialog_that_escape_and_cancel_close_giving_the_focus_back(
    page: Page,
) -> None:
    page.goto("/tenants/acme/")
    button = page.get_by_role("button", name="Delete tenant…")
    dialog = page.get_by_role("dialog", name="Delete tenant acme?")
    expect(dialog).to_be_hidden()
    button.focus()
    page.keyboard.press("Enter")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("then run under the default limits")
    expect(dialog).to_contain_text("History keeps the deletion as a revision")
    expect(page.locator("#cancel-delete")).to_be_focused()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(button).to_be_focused()
    page.keyboard.press("Enter")
    expect(dialog).to_be_visible()
    page.keyboard.press("Enter")  # on Cancel
    expect(dialog).to_be_hidden()
    expect(button).to_be_focused()
    page.reload()
    expect(page.get_by_role("heading", name="Tenant acme")).to_be_visible()


def test_a_delete_from_a_page_gone_stale_gives_the_stale_message(
    page: Page, server: DaphneProcess
) -> None:
    page.goto("/tenants/gold/")
    server.run_python(
        "from api.store import services\n"
        "services.tenant_patch(tenant_id='gold', changes={'max_queriers_per_tenant': 4},"
        " expected_version=None, author=None, source='cli')\n"
    )
    page.get_by_role("button", name="Delete tenant…").click()
    page.get_by_role("button", name="Delete gold").click()
    expect(page).to_have_url(re.compile(r"/tenants/gold/$"))
    expect(page.locator(".msg-error")).to_contain_text(
        "Someone saved a change since you loaded this page"
    )
    expect(page.locator(f'[name="{MAX_QUERIERS}"]')).to_have_value("4")


def test_deleting_with_unsaved_edits_lists_it_gone_and_history_rolls_it_back(page: Page) -> None:
    page.goto("/tenants/acme/")
    page.get_by_role("button", name="+ Rule").click()  # a draft: leaving it would ask
    page.locator(f'[name="{MAX_QUERIERS}"]').fill("2")
    page.get_by_role("button", name="Delete tenant…").click()
    expect(page.get_by_role("dialog")).to_contain_text("Unsaved edits on this page are not kept")
    page.get_by_label("Change note (optional)").fill("retired")
    page.get_by_role("button", name="Delete acme").click()
    expect(page).to_have_url(re.compile(r"/tenants/$"))
    expect(page.locator(".msg-success")).to_contain_text("Deleted acme")
    expect(page.get_by_role("link", name="acme", exact=True)).to_have_count(0)
    page.goto("/history/")
    newest = page.locator(".revision").first
    expect(newest).to_contain_text("deleted by erin via UI")
    expect(newest).to_contain_text("retired")
    newest.get_by_role("button", name=re.compile("Roll back")).click()
    page.locator("#confirm-rollback").click()
    expect(page.locator(".msg-success")).to_contain_text("Rolled back")
    page.goto("/tenants/")
    expect(page.get_by_role("link", name="acme", exact=True)).to_be_visible()


def test_back_to_a_confirmed_review_and_confirming_again_says_it_was_saved(page: Page) -> None:
    page.goto("/tenants/gold/")
    page.locator(f'[name="{MAX_QUERIERS}"]').fill("5")
    page.locator("#save").click()
    expect(page.locator("#review")).to_be_visible()
    page.locator("#confirm-save").click()
    expect(page.locator(".msg-success")).to_contain_text("Saved gold")
    page.go_back()
    expect(page.locator("#confirm-save")).to_be_visible()
    page.locator("#confirm-save").click()
    expect(page.locator(".msg-info")).to_contain_text("You already saved this change")
    expect(page.locator(".msg-error")).to_have_count(0)
    expect(page.locator(f'[name="{MAX_QUERIERS}"]')).to_have_value("5")
