"""From Simulate back to the tenant editor or Settings it was opened from, the draft kept,
in Chromium.

The proposal as last edited under Proposed is what the page opens on,
unsaved; changes that cannot go back are stopped at their box.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.drill_pages import no_horizontal_scroll

REGEX = "query_priority.priorities[0].query_attributes[0].regex"


def _from_the_editor(page: Page, regex: str) -> None:
    page.goto("/tenants/acme/")
    page.locator(f'[name="{REGEX}"]').fill(regex)
    page.get_by_role("button", name="Simulate this change").click()
    expect(page).to_have_url(re.compile(r"/simulate/$"))
    # A new page: what goes back is checked and rewritten by its scripts
    # (simulate_back.js), attached by its load event, not by the URL.
    page.wait_for_load_state()


@pytest.mark.parametrize("width", [1280, 400])
def test_the_editor_s_draft_comes_back_from_simulate_unsaved(page: Page, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    _from_the_editor(page, "special")
    back = page.get_by_role("button", name="‹ Back to tenant acme's editor, with this draft")
    expect(back).to_be_visible()
    wider, sticking_out = no_horizontal_scroll(page, width)
    assert wider <= 0, sticking_out
    # From the keyboard.
    back.focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/tenants/acme/$"))
    expect(page.locator(f'[name="{REGEX}"]')).to_have_value("special")
    expect(page.locator("#tenant-form")).to_have_attribute("data-draft", "")
    # Not saved: the page opened from its link shows the stored rule.
    page.once("dialog", lambda dialog: dialog.accept())  # leaving an unsaved draft asks
    page.goto("/tenants/acme/")
    expect(page.locator(f'[name="{REGEX}"]')).to_have_value("^never$")


def test_a_block_edited_under_proposed_is_what_goes_back(page: Page) -> None:
    _from_the_editor(page, "special")
    box = page.locator("#sim-proposed")
    proposal = json.loads(box.input_value())
    proposal["tenants"]["acme"]["query_priority"]["priorities"][0]["query_attributes"][0][
        "regex"
    ] = "edited-here"
    box.fill(json.dumps(proposal))
    page.get_by_role("button", name=re.compile("^‹ Back to tenant acme's editor")).click()
    expect(page).to_have_url(re.compile(r"/tenants/acme/$"))
    expect(page.locator(f'[name="{REGEX}"]')).to_have_value("edited-here")


def test_changes_that_cannot_go_back_are_stopped_at_the_changes_box(page: Page) -> None:
    _from_the_editor(page, "special")
    box = page.locator("#sim-proposed")
    back = page.get_by_role("button", name=re.compile("^‹ Back to tenant acme's editor"))
    box.fill('{"tenants": {"acme": ')
    back.click()
    expect(page.locator("#proposed-error")).to_contain_text(
        "Nothing was taken back to the editor: the changes are not valid JSON"
    )
    expect(box).to_be_focused()
    expect(page).to_have_url(re.compile(r"/simulate/$"))
    box.fill('{"tenants": {"acme": null}}')
    back.click()
    expect(page.locator("#proposed-error")).to_have_text(
        "Nothing was taken back to the editor: the changes hold no block for tenant acme "
        "(at tenants.acme)."
    )
    expect(page).to_have_url(re.compile(r"/simulate/$"))


def _from_settings(page: Page) -> None:
    """Settings with the layout and the forget delay changed, then its Simulate button."""
    page.goto("/settings/")
    page.locator("#s-layout").select_option("component-first")
    page.locator("#s-querier_forget_delay").fill("2m")
    page.get_by_role("button", name="Simulate switching layout / component selection").click()
    expect(page).to_have_url(re.compile(r"/simulate/$"))
    page.wait_for_load_state()  # its scripts, as in _from_the_editor


def test_the_settings_draft_comes_back_from_simulate_unsaved(page: Page) -> None:
    _from_settings(page)
    page.get_by_role("button", name="‹ Back to Settings, with this draft").click()
    expect(page).to_have_url(re.compile(r"/settings/$"))
    expect(page.locator("#s-layout")).to_have_value("component-first")
    expect(page.locator("#s-querier_forget_delay")).to_have_value("2m")
    expect(page.locator("#settings-draft")).to_contain_text("Unsaved draft")
    # Not saved: the page opened from its link shows the running settings.
    page.goto("/settings/")
    expect(page.locator("#s-layout")).to_have_value("tenant-first")
    expect(page.locator("#s-querier_forget_delay")).to_have_value("0s")


def test_settings_edited_under_proposed_are_what_goes_back_to_settings(page: Page) -> None:
    _from_settings(page)
    box = page.locator("#sim-proposed")
    proposal = json.loads(box.input_value())
    # The layout change dropped here goes back as the live layout.
    proposal["settings"] = {"querier_forget_delay": "5m", "max_federated_tenants": 7}
    box.fill(json.dumps(proposal))
    page.get_by_role("button", name="‹ Back to Settings, with this draft").click()
    expect(page).to_have_url(re.compile(r"/settings/$"))
    expect(page.locator("#s-layout")).to_have_value("tenant-first")
    expect(page.locator("#s-querier_forget_delay")).to_have_value("5m")
    expect(page.locator("#s-max_federated_tenants")).to_have_value("7")


def test_a_setting_settings_has_no_box_for_is_stopped_at_the_changes_box(page: Page) -> None:
    _from_settings(page)
    page.locator("#sim-proposed").fill('{"settings": {"no_such_setting": 1}}')
    page.get_by_role("button", name="‹ Back to Settings, with this draft").click()
    expect(page.locator("#proposed-error")).to_have_text(
        "Nothing was taken back to Settings: the settings form has no box for no_such_setting "
        "(at settings.no_such_setting)."
    )
    expect(page.locator("#sim-proposed")).to_be_focused()
    expect(page).to_have_url(re.compile(r"/simulate/$"))
