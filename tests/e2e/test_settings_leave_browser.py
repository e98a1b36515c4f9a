"""Leaving Settings with unsaved settings asks first, in Chromium.

The page asks (the browser's beforeunload dialog) while a box differs from
the setting that runs, and not when the draft goes on purpose: saved,
discarded, or taken to Simulate, whose way back brings it here again.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.e2e.conftest import go_to_history

BOX = "#s-stuck_threshold"
SIMULATE = "Simulate switching layout / component selection"


def running_value(page: Page) -> str:
    """The stuck threshold that runs, as the fresh page shows it."""
    page.goto("/settings/")
    value = page.locator(BOX).input_value()
    assert value, "the box shows the running threshold"
    return value


def test_an_edited_setting_asks_before_a_link_leaves_and_the_old_value_typed_back_does_not(
    page: Page, asked: list[str]
) -> None:
    old = running_value(page)
    page.locator(BOX).fill("7m")
    go_to_history(page)
    assert asked == ["beforeunload"]
    expect(page).to_have_url(re.compile(r"/settings/$"))
    expect(page.locator(BOX)).to_have_value("7m")
    # Typed back as it runs (spaces around it are not read): nothing to lose.
    page.locator(BOX).fill(f" {old} ")
    go_to_history(page)
    expect(page).to_have_url(re.compile(r"/history/$"))
    assert asked == ["beforeunload"]


def test_a_changed_select_asks_and_the_change_note_alone_does_not(
    page: Page, asked: list[str]
) -> None:
    running_value(page)
    page.get_by_role("textbox", name="Change note").fill("not a setting")
    go_to_history(page)
    expect(page).to_have_url(re.compile(r"/history/$"))
    assert asked == []
    page.goto("/settings/")
    layout = page.locator("#s-layout")
    other = "component-first" if layout.input_value() == "tenant-first" else "tenant-first"
    layout.select_option(other)
    go_to_history(page)
    assert asked == ["beforeunload"]
    expect(page).to_have_url(re.compile(r"/settings/$"))


def test_the_review_holds_the_draft_until_discarded_and_a_confirmed_save_leaves_without_asking(
    page: Page, asked: list[str]
) -> None:
    old = running_value(page)
    page.locator(BOX).fill("7m")
    page.get_by_role("button", name="Save settings").click()
    review = page.locator("#review")
    expect(review).to_be_visible()
    # A new page: it asks before leaving once its scripts have run (by its load event).
    page.wait_for_load_state()
    # The review page was rendered from the post: its boxes hold the draft.
    go_to_history(page)
    assert asked == ["beforeunload"]
    review.get_by_role("link", name="Discard changes").click()
    expect(page.locator("#review")).to_have_count(0)
    expect(page.locator(BOX)).to_have_value(old)
    assert asked == ["beforeunload"]
    # Saved: the page that follows runs the new value, and leaves freely.
    page.locator(BOX).fill("7m")
    page.get_by_role("button", name="Save settings").click()
    page.get_by_role("button", name="Confirm and save").click()
    expect(page.get_by_text("Settings saved; the scheduler applies them now.")).to_be_visible()
    expect(page.locator(BOX)).to_have_value("7m")
    go_to_history(page)
    expect(page).to_have_url(re.compile(r"/history/$"))
    assert asked == ["beforeunload"]
    # Put back for the module's other tests, which read it afresh anyway.
    page.goto("/settings/")
    page.locator(BOX).fill(old)
    page.get_by_role("button", name="Save settings").click()
    page.get_by_role("button", name="Confirm and save").click()
    expect(page.locator(BOX)).to_have_value(old)
    assert asked == ["beforeunload"]


def test_simulate_takes_the_draft_without_asking_and_back_the_draft_still_asks(
    page: Page, asked: list[str]
) -> None:
    running_value(page)
    box = page.locator(BOX)
    box.fill("7m")
    page.get_by_role("button", name=SIMULATE).click()
    expect(page).to_have_url(re.compile(r"/simulate/$"))
    assert asked == []
    # The browser's Back: the page as it was left, its draft in the box; the
    # submit that took the draft to Simulate no longer counts as leaving.
    page.go_back()
    expect(page).to_have_url(re.compile(r"/settings/$"))
    expect(box).to_have_value("7m")
    go_to_history(page)
    assert asked == ["beforeunload"]
    expect(page).to_have_url(re.compile(r"/settings/$"))


def test_the_draft_back_from_simulate_asks_until_discarded_or_typed_back(
    page: Page, asked: list[str]
) -> None:
    old = running_value(page)
    page.locator(BOX).fill("7m")
    page.get_by_role("button", name=SIMULATE).click()
    page.get_by_role("button", name="‹ Back to Settings, with this draft").click()
    expect(page.locator("#settings-draft")).to_contain_text("Unsaved draft")
    expect(page.locator(BOX)).to_have_value("7m")
    page.wait_for_load_state()  # a new page: its leave guard comes with its scripts
    assert asked == []
    go_to_history(page)
    assert asked == ["beforeunload"]
    page.locator("#settings-draft").get_by_role("link", name="discard them").click()
    expect(page.locator("#settings-draft")).to_have_count(0)
    expect(page.locator(BOX)).to_have_value(old)
    assert asked == ["beforeunload"]
    # Back again with the draft, and the running value typed back over it:
    # the page still says it came from Simulate, but nothing would be lost.
    page.locator(BOX).fill("7m")
    page.get_by_role("button", name=SIMULATE).click()
    page.get_by_role("button", name="‹ Back to Settings, with this draft").click()
    expect(page.locator("#settings-draft")).to_be_visible()
    page.locator(BOX).fill(old)
    go_to_history(page)
    expect(page).to_have_url(re.compile(r"/history/$"))
    assert asked == ["beforeunload"]
