"""The tenant editor's hit counts and dry run with federated traffic (`fed|zz` for `fed`)."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic, one_rule, put_tenant


def test_the_hit_counts_list_federated_ids_and_measure_rules_against_what_they_judged(
    page: Page, traffic: Traffic, server: DaphneProcess
) -> None:
    # boss comes first in boss|fed and has priority enabled: its rules judge
    # that ID's requests; fed's judge fed|zz's (zz has no block).
    put_tenant(server, "boss", one_rule("^never$"))
    put_tenant(server, "fed", one_rule("^never$"))
    traffic.enqueue("fed", query="up", count=2)
    traffic.enqueue("fed|zz", query="up", count=3)
    traffic.enqueue("boss|fed", query="up", count=4)

    page.goto("/tenants/fed/")
    expect(page.locator('[data-hits="federated"]')).to_have_text(
        "Counted above, from federated org IDs naming fed: "
        "boss|fed last 5 min: 4 · last hour: 4 · since this version: 4 "
        "(judged by boss's priority rules); "
        "fed|zz last 5 min: 3 · last hour: 3 · since this version: 3 "
        "(judged by these priority rules)."
    )
    # Measured against the 5 requests fed's rules judged, not boss's 4 as well.
    expect(page.locator('[data-hits="rule-0"]')).to_have_text(
        re.compile(r"^matched nothing in the \d+ s since this version, of 5 requests$")
    )
    expect(page.locator('[data-hits="default"]')).to_contain_text(
        "took in the last 5 min: 5 · last hour: 5"
    )

    page.get_by_role("button", name="Test against recent traffic").click()
    expect(page.locator(".dry-run-federated-note")).to_be_visible()
    expect(page.locator(".dry-run-serving")).to_have_text(
        [
            "Now: any querier may serve it; none is reserved.",
            "With the form: any querier may serve it; none is reserved.",
            "boss|fed, now: any querier may serve it; none is reserved.",
            "boss|fed, with the form: any querier may serve it; none is reserved.",
            "fed|zz, now: any querier may serve it; none is reserved.",
            "fed|zz, with the form: any querier may serve it; none is reserved.",
        ]
    )
