"""An operator's whole path through the config pages with the keyboard alone, in Chromium.

Log in, create a tenant with a priority rule, test it against recent
traffic, save a change through its review, compare the two revisions on
History and roll the change back: Tab, Shift+Tab, Enter, Space and
typing, never the mouse. Reading the page to check it is the only
thing done otherwise.
"""

from __future__ import annotations

import re

from playwright.sync_api import Browser, Locator, Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import EDITOR, Traffic, browser_tab

TENANT = "keys-only"
MOST_TABS = 200


def _tab_to(page: Page, target: Locator, *, back: bool = False) -> None:
    """Press Tab (Shift+Tab with `back`) until `target` has the focus."""
    target.wait_for()
    for _ in range(MOST_TABS):
        if target.evaluate("(el) => el === document.activeElement"):
            return
        page.keyboard.press("Shift+Tab" if back else "Tab")
    raise AssertionError(f"{MOST_TABS} tabs never reached {target}")


def _box(page: Page, name: str) -> Locator:
    return page.locator(f'[id="{name}"]')


def test_an_operator_creates_tests_saves_compares_and_rolls_back_with_the_keyboard_alone(
    browser: Browser, server: DaphneProcess, traffic: Traffic
) -> None:
    with browser_tab(browser, server) as page:
        keys = page.keyboard
        page.goto("/tenants/new/")
        expect(page.get_by_label("User name")).to_be_focused()
        keys.type(EDITOR[0])
        keys.press("Tab")
        keys.type(EDITOR[1])
        keys.press("Enter")
        # The editor's own address, not the login page's (?next=/tenants/new/),
        # and its load: the keys below need its scripts ("+ Rule" keeps the
        # focus through them), attached only after the page is parsed.
        page.wait_for_url(re.compile(r"://[^/]+/tenants/new/$"))

        # A new tenant with priorities on and one rule.
        _tab_to(page, page.get_by_label("Tenant ID"))
        keys.type(TENANT)
        _tab_to(page, page.get_by_label("Enabled (off: every request gets priority 0)"))
        keys.press("Space")
        _tab_to(page, page.get_by_role("button", name="+ Rule"))
        keys.press("Enter")
        priority = _box(page, "query_priority.priorities[0].priority")
        expect(priority).to_be_focused()
        keys.type("5")
        _tab_to(page, _box(page, "query_priority.priorities[0].query_attributes[0].regex"))
        keys.type("hot")
        _tab_to(page, page.get_by_role("button", name="Save", exact=True))
        keys.press("Enter")
        expect(page.get_by_role("button", name="Confirm and save")).to_be_focused()
        # The review is a new page, focused as it is parsed: Enter once its
        # scripts have run, as a person would press it.
        page.wait_for_load_state()
        keys.press("Enter")
        expect(page).to_have_url(re.compile(rf"/tenants/{TENANT}/$"))
        expect(page.locator(".messages")).to_contain_text(f"Saved {TENANT}")
        # A new page: the dry run's Enter below needs its scripts.
        page.wait_for_load_state()

        # The changed rule against the tenant's recent requests, then saved.
        traffic.enqueue(TENANT, query="sum(rate(hot_total[5m]))", count=2)
        _tab_to(page, priority)
        keys.press("Control+a")
        keys.type("8")
        dry_run = page.get_by_role("button", name="Test against recent traffic")
        _tab_to(page, dry_run)
        keys.press("Enter")
        # The dry run replays the sample on the server's loop: over the suite's
        # ten seconds on a busy 2-core machine (as the YAML view's, test_editor_keys).
        expect(page.locator("#dry-run-changed")).to_have_text("2", timeout=30_000)
        expect(dry_run).to_be_focused()
        _tab_to(page, page.get_by_role("button", name="Save", exact=True), back=True)
        keys.press("Enter")
        expect(page.locator("#review-diff")).to_contain_text("priority: 8")
        expect(page.get_by_role("button", name="Confirm and save")).to_be_focused()
        page.wait_for_load_state()  # the review is a new page (as above)
        keys.press("Enter")
        expect(page.locator(".messages")).to_contain_text(f"Saved {TENANT}")

        # History, narrowed to the tenant: its two revisions compared.
        _tab_to(page, page.get_by_role("link", name="History"))
        keys.press("Enter")
        _tab_to(page, page.get_by_label("Tenant", exact=True))
        keys.type(TENANT)
        keys.press("Enter")
        revisions = page.locator(".revision[data-version]")
        expect(revisions).to_have_count(2)
        # The narrowed History is a new page: its picks are kept in place by
        # its scripts, which have run by its load event.
        page.wait_for_load_state()
        changed, created = (revisions.nth(i).get_attribute("data-version") for i in (0, 1))
        picked_from = page.get_by_role("button", name=f"Compare from revision {created}")
        _tab_to(page, picked_from)
        keys.press("Space")
        expect(picked_from).to_have_attribute("aria-pressed", "true")
        picked_to = page.get_by_role("button", name=f"Compare to revision {changed}")
        _tab_to(page, picked_to, back=True)
        keys.press("Enter")
        expect(picked_to).to_have_attribute("aria-pressed", "true")
        _tab_to(page, page.get_by_role("button", name="Compare selected"), back=True)
        keys.press("Enter")
        expect(page.get_by_role("heading", name="Compare revisions")).to_be_visible()
        expect(page.locator("#compare-diff .yl.added")).to_contain_text("priority: 8")

        # Back to History, and the change rolled back after its diff.
        _tab_to(page, page.get_by_role("link", name="‹ History"))
        keys.press("Enter")
        _tab_to(page, page.get_by_role("button", name=f"Roll back revision {changed}"))
        keys.press("Enter")
        expect(page.locator("#rollback-diff .yl.added")).to_contain_text("priority: 5")
        expect(page.get_by_role("button", name=f"Roll back #{changed}")).to_be_focused()
        keys.press("Enter")
        expect(page.locator(".messages")).to_contain_text("Rolled back: new revision")
        page.goto(f"/tenants/{TENANT}/")
        expect(priority).to_have_value("5")
