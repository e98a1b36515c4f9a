"""History's From and To picks with the keyboard, in Chromium: moving along the list picks nothing.

The module's server gets a few more tenants, so History lists several revisions.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess

SOME = """
from api.store import services
for n in range(5):
    services.tenant_put(tenant_id=f"keys-{n}", config={}, expected_version=None, author=None,
                        source="cli")
"""


@pytest.fixture(scope="module", autouse=True)
def _some_revisions(server: DaphneProcess) -> None:
    server.run_python(SOME)


def _versions(page: Page) -> list[str]:
    versions: list[str] = page.locator(".revision").evaluate_all(
        "(rows) => rows.map((row) => row.dataset.version)"
    )
    return versions


def test_moving_past_revisions_with_arrows_and_tab_changes_no_pick(page: Page) -> None:
    page.goto("/history/")
    first, second, third = _versions(page)[:3]
    picked_from = page.locator('#compare-picked [data-pick="from"]')
    page.get_by_label(f"Compare from revision {first}").focus()
    page.keyboard.press("Space")
    expect(picked_from).to_have_text(f"#{first}")
    url = page.url
    for key in ("ArrowDown", "ArrowDown", "ArrowUp", "ArrowDown"):
        page.keyboard.press(key)
    expect(picked_from).to_have_text(f"#{first}")
    assert page.url == url
    # Tab goes on to the next revision's controls, each a stop of its own,
    # passing the rest picking nothing.
    target = page.get_by_label(f"Compare to revision {second}")
    for _ in range(30):
        if target.evaluate("(el) => el === document.activeElement"):
            break
        page.keyboard.press("Tab")
    expect(target).to_be_focused()
    expect(picked_from).to_have_text(f"#{first}")
    expect(page.locator('#compare-picked [data-pick="to"]')).to_have_text("none")
    page.keyboard.press("Space")
    expect(page.locator('#compare-picked [data-pick="to"]')).to_have_text(f"#{second}")
    expect(target).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_label(f"Compare from revision {first}")).to_have_attribute(
        "aria-pressed", "true"
    )
    expect(page.get_by_label(f"Compare from revision {third}")).to_have_attribute(
        "aria-pressed", "false"
    )
    assert re.search(r"[?&]to=\d+", page.url)


def test_a_pick_pressed_again_is_dropped_and_the_page_keeps_no_trace_of_it(page: Page) -> None:
    requests: list[str] = []
    page.goto("/history/")
    page.on("request", lambda request: requests.append(request.url))
    newest = _versions(page)[0]
    button = page.get_by_role("button", name=f"Compare from revision {newest}")
    button.click()
    expect(page.locator('#compare-picked [data-pick="from"]')).to_have_text(f"#{newest}")
    expect(page.locator("#clear-picks")).to_be_visible()
    button.click()
    expect(button).to_have_attribute("aria-pressed", "false")
    expect(page.locator('#compare-picked [data-pick="from"]')).to_have_text("none")
    expect(page.locator("#clear-picks")).to_be_hidden()
    assert "from=" not in page.url
    assert requests == []  # picked and dropped in place, no round trip
    page.get_by_role("button", name="Compare selected").click()
    expect(page.locator("#compare-problem")).to_have_text(
        "Pick two revisions to compare: one as From and one as To."
    )
