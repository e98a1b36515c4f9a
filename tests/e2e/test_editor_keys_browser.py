"""The tenant editor with the keyboard, and its tools in the YAML view, in Chromium.

Enter in a box asks for Save's review in the view the operator is in (it
pressed the first button of the form, the view switch: Enter in the YAML
view's change note turned it into the form); Enter in the explain box
explains in place; "Test against recent traffic" in the YAML view tests the
YAML (it read the form's inputs, which the YAML view has none of, and
reported every sampled request as dropping to priority 0).
"""

from __future__ import annotations

import re

from playwright.sync_api import Browser, Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic, browser_tab, put_tenant

SPECIAL: dict[str, object] = {
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        "priorities": [{"priority": 5, "query_attributes": [{"regex": "special"}]}],
    }
}


def test_enter_in_the_yaml_views_change_note_asks_for_the_review_in_the_yaml_view(
    page: Page,
) -> None:
    page.goto("/tenants/acme/")
    page.get_by_role("button", name="YAML", exact=True).click()
    expect(page.locator("#yaml-editor")).to_be_visible()
    page.locator("#yaml-editor .cm-line").nth(7).click()
    page.keyboard.press("End")
    page.keyboard.type("|urgent")
    page.locator("#message").fill("widen the rule")
    page.locator("#message").press("Enter")
    expect(page.locator("#confirm-save")).to_be_focused()
    expect(page.locator("#review-diff .yl.added mark")).to_have_text("|urgent")
    expect(page.locator("#view-yaml")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#yaml-editor .cm-line").nth(7)).to_have_text(
        "      - regex: ^never$|urgent"
    )
    expect(page.locator("#message")).to_have_value("widen the rule")


def test_enter_in_a_form_box_asks_for_the_review(page: Page) -> None:
    page.goto("/tenants/gold/")
    box = page.locator('[id="query_priority.default_priority"]')
    box.fill("3")
    box.press("Enter")
    expect(page.locator("#confirm-save")).to_be_focused()
    expect(page.locator("#review-diff .yl.added")).to_contain_text("default_priority: 3")


def test_enter_in_the_explain_box_explains_in_place(page: Page) -> None:
    page.goto("/tenants/gold/")
    page.locator('[id="query_priority.default_priority"]').fill("4")
    page.locator("#explain_query").fill("up")
    page.locator("#explain_step").press("Enter")
    expect(page.locator("#explain-output")).to_contain_text("Priority")
    expect(page.locator("#explain-output")).to_contain_text("4")
    expect(page.locator("#review")).to_have_count(0)
    # Answered in place: the unsaved edit is still in its box.
    expect(page.locator('[id="query_priority.default_priority"]')).to_have_value("4")


def test_the_yaml_views_dry_run_tests_the_yaml_it_shows(
    page: Page, traffic: Traffic, server: DaphneProcess
) -> None:
    put_tenant(server, "keys", SPECIAL)
    traffic.enqueue("keys", query="sum(rate(special_total[5m]))", count=3)
    traffic.enqueue("keys", query="up", count=2)
    page.goto("/tenants/keys/")
    page.get_by_role("button", name="YAML", exact=True).click()
    expect(page.locator("#yaml-editor")).to_be_visible()
    page.get_by_role("button", name="Test against recent traffic").click()
    # The YAML's dry run is an import's: the first one starts the server's
    # import worker process (Python and Django), seconds on a busy machine.
    expect(page.locator("#dry-run-sample")).to_have_text("5", timeout=15_000)
    expect(page.locator("#dry-run-changed")).to_have_text("0")
    expect(page.locator("#dry-run-unchanged")).to_have_text("5")


def test_escape_in_the_review_sets_it_aside_and_returns_to_save(page: Page) -> None:
    page.goto("/tenants/gold/")
    page.locator('[id="query_priority.default_priority"]').fill("6")
    page.locator("#save").click()
    expect(page.locator("#confirm-save")).to_be_focused()
    # The review is a new page, focused as it is parsed; its key handler comes
    # with the module scripts, which have run by the load event. Pressed before
    # (a busy machine, two test workers), Escape met no handler.
    page.wait_for_load_state()
    page.keyboard.press("Escape")
    expect(page.locator("#review")).to_have_count(0)
    expect(page.locator("#save")).to_be_focused()
    expect(page.locator('[id="query_priority.default_priority"]')).to_have_value("6")
    # Its token went with it: the next Save reviews again rather than saves.
    page.keyboard.press("Enter")
    expect(page.locator("#confirm-save")).to_be_focused()


def test_a_viewers_checkbox_stays_as_saved_when_clicked(
    browser: Browser, server: DaphneProcess
) -> None:
    # An inline onclick kept it so; the Content-Security-Policy blocks inline handlers.
    put_tenant(server, "acme-ro", SPECIAL)
    server.create_user("vic", "pw-vic-e2e-123", group="viewer")
    with browser_tab(browser, server) as tab:
        tab.goto("/login/?next=/tenants/acme-ro/")
        tab.get_by_label("User name").fill("vic")
        tab.get_by_label("Password").fill("pw-vic-e2e-123")
        tab.get_by_role("button", name="Log in").click()
        # Its load: the page's scripts have run (the checkbox's click handler
        # is one). Not "**/tenants/acme-ro/": that glob matches the login
        # page's own URL (?next=/tenants/acme-ro/) and returned at once.
        tab.wait_for_url(re.compile(r"://[^/]+/tenants/acme-ro/$"))
        enabled = tab.get_by_label("Enabled (off: every request gets priority 0)")
        expect(enabled).to_be_checked()
        enabled.click()
        expect(enabled).to_be_checked()
        expect(enabled).to_have_attribute("aria-readonly", "true")
