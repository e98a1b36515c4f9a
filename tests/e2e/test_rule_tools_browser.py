"""The tenant editor against real traffic: dry run of an edit, save, live hit counts."""

from __future__ import annotations

import re

from playwright.sync_api import Page, Route, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic, full_page_screenshot, put_tenant

REGEX = "query_priority.priorities[0].query_attributes[0].regex"
# A priority rule nothing matches yet: every request gets the default, 0.
NEVER: dict[str, object] = {
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        "priorities": [{"priority": 5, "query_attributes": [{"regex": "^never$"}]}],
    }
}


def _save(page: Page) -> None:
    """Save as a person does: the first Save may answer with a review to confirm."""
    page.get_by_role("button", name="Save", exact=True).click()
    confirm = page.locator("#confirm-save")
    success = page.locator(".msg-success")
    expect(confirm.or_(success).first).to_be_visible()
    if confirm.is_visible():
        confirm.click()
    expect(success).to_contain_text("Saved hits")


def test_an_edit_is_tested_on_recent_traffic_saved_and_its_rule_then_counts_live(
    page: Page, traffic: Traffic, server: DaphneProcess
) -> None:
    put_tenant(server, "hits", NEVER)
    traffic.enqueue("hits", query="sum(rate(special_total[5m]))", count=4)
    traffic.enqueue("hits", query="up", count=2)

    page.goto("/tenants/hits/")
    rule = page.locator('[data-hits="rule-0"]')
    # Counted for seconds only: said so, and not flagged yet.
    expect(rule).to_have_text(
        re.compile(r"^matched nothing in the \d+ s since this version, of 6 requests$")
    )
    expect(rule).to_have_class("hits")
    expect(page.locator('[data-hits="default"]')).to_contain_text("last hour: 6")

    page.locator(f'[name="{REGEX}"]').fill("special")
    page.get_by_role("button", name="Test against recent traffic").click()
    expect(page.locator("#dry-run-sample")).to_have_text("6")
    expect(page.locator("#dry-run-changed")).to_have_text("4")
    expect(page.locator("#dry-run-unchanged")).to_have_text("2")
    row = page.locator(".dry-run-changes tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text(re.compile(r"priority 0\s*priority 5\s*4"))
    expect(row).to_contain_text("sum(rate(special_total[5m]))")
    expect(page.locator(".dry-run-serving")).to_have_text(
        [
            "Now: any querier may serve it; none is reserved.",
            "With the form: any querier may serve it; none is reserved.",
        ]
    )
    full_page_screenshot(page, "tenant-dry-run.png")

    _save(page)
    page.goto("/tenants/hits/")
    expect(rule).to_contain_text("since this version: 0")
    traffic.enqueue("hits", query="sum(rate(special_total[5m]))", count=3)
    # The new version's counts start from zero and rise as the queries arrive.
    expect(rule).to_contain_text(
        "matched in the last 5 min: 3 · last hour: 3 · since this version: 3", timeout=10_000
    )
    expect(page.locator('[data-hits="rule-0-attr-0"]')).to_contain_text("since this version: 3")


def test_a_rule_that_matched_nothing_is_flagged_once_five_minutes_were_counted(
    page: Page, server: DaphneProcess
) -> None:
    put_tenant(server, "quiet", NEVER)
    counted = {"seconds": 600.0}

    def aged(route: Route) -> None:
        # The server's real body for the tenant's rules, as if two requests
        # had gone to the default priority over a longer count than a test
        # may wait (requests sent right after the seed could still be judged
        # by the config before it, which the scheduler applies within its
        # reconcile period).
        body = route.fetch().json()
        body["counting_seconds"] = counted["seconds"]
        body["total"] = body["default"]["matched"] = {"5m": 0, "1h": 2, "version": 2}
        route.fulfill(json=body)

    page.route(re.compile(r"/api/v1/tenants/quiet/rule-stats/$"), aged)
    page.goto("/tenants/quiet/")
    rule = page.locator('[data-hits="rule-0"]')
    expect(rule).to_have_text("matched nothing in the 10 min since this version, of 2 requests")
    expect(rule).to_have_class("hits idle")
    counted["seconds"] = 4000.0
    expect(rule).to_have_text("matched nothing in the last hour, of 2 requests", timeout=10_000)
    expect(rule).to_have_class("hits idle")
    counted["seconds"] = 30.0
    expect(rule).to_have_text(
        "matched nothing in the 30 s since this version, of 2 requests", timeout=10_000
    )
    expect(rule).to_have_class("hits")  # too young to flag


RESERVED = "query_priority.priorities[0].reserved_queriers"
LEFT = re.compile(
    r"^With the form: Any of the 3 queriers may serve spare\. Reserved: q-spare-\d takes only "
    r"its priority 5 and above, so its requests below priority 5 \(2 of the 6 sampled\) wait "
    r"for the other 2 queriers\.$"
)


def test_the_dry_run_says_what_a_reservation_would_leave_the_lower_priorities(
    page: Page, traffic: Traffic, server: DaphneProcess
) -> None:
    put_tenant(server, "spare", NEVER)
    with traffic.queriers("q-spare", 3, latency=lambda _: 0.01):
        traffic.enqueue("spare", query="sum(rate(special_total[5m]))", count=4)
        traffic.enqueue("spare", query="up", count=2)
        page.goto("/tenants/spare/")
        expect(page.locator('[data-hits="default"]')).to_contain_text("last hour: 6")
        page.locator(f'[name="{REGEX}"]').fill("special")
        page.locator(f'[name="{RESERVED}"]').fill("1")
        page.get_by_role("button", name="Test against recent traffic").click()
        lines = page.locator(".dry-run-serving")
        expect(lines.first).to_have_text("Now: any querier may serve it; none is reserved.")
        expect(lines.nth(1)).to_have_text(LEFT)
