"""Simulate's "Proposed starts from", offered only when it can change something, in Chromium.

With nothing recorded before the window, both sides start from an empty
queue whichever backlog is picked: the page says so before a run, with the
choice disabled, and offers it once time before the window has been
recorded. Each window's option carries when that is (data-warmup-in,
seconds after the page was drawn; dashboard/views_simulate.py): set here,
so the test does not depend on how long the server has been recording.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect


def _warmup_in(page: Page, option: str, seconds: float) -> None:
    """Time before `option`'s window will have been recorded `seconds` from now."""
    page.locator(f'option[value="{option}"]').evaluate(
        "(el, s) => { el.dataset.warmupIn = String(performance.now() / 1000 + s); }", seconds
    )


def test_a_window_with_nothing_recorded_before_it_says_both_start_empty_until_there_is(
    page: Page,
) -> None:
    page.goto("/simulate/")
    _warmup_in(page, "recent:300", 3)
    page.get_by_label("Traffic").select_option("recent:300")
    choice = page.get_by_label("Proposed starts from")
    note = page.locator("#start-from-none")
    expect(choice).to_be_disabled()
    expect(note).to_be_visible()
    expect(note).to_have_text(
        re.compile(
            r"^Nothing was recorded before this window yet: both sides start from an empty "
            r"queue, whichever is picked\. Time before it will have been recorded in [0-9.]+s\.$"
        )
    )
    expect(choice).to_have_accessible_description(re.compile(r"^Nothing was recorded before"))
    # Once it has, the choice is offered, without reloading the page.
    expect(choice).to_be_enabled(timeout=10_000)
    expect(note).to_be_hidden()


def test_a_window_with_time_recorded_before_it_offers_the_choice(page: Page) -> None:
    page.goto("/simulate/")
    _warmup_in(page, "recent:900", 600)
    page.locator('option[value="recent:300"]').evaluate("(el) => { el.dataset.warmupIn = '0'; }")
    page.get_by_label("Traffic").select_option("recent:900")
    choice = page.get_by_label("Proposed starts from")
    expect(choice).to_be_disabled()
    expect(page.locator("#start-from-none")).to_contain_text("in 10m")
    page.get_by_label("Traffic").select_option("recent:300")
    expect(choice).to_be_enabled()
    expect(page.locator("#start-from-none")).to_be_hidden()
    # A scenario has no live backlog: the field is not offered at all.
    page.get_by_label("Traffic").select_option("scenario:cortex-seed")
    expect(page.locator("#start-from-field")).to_be_hidden()
