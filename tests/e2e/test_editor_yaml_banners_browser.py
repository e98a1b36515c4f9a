"""The YAML view's banners in Chromium: they follow the text as typed.

The error summary counted the draft a refused Save was rendered with, and
the "Not used here" notice listed that draft's unused Cortex limits; both
stayed as they were while the text changed under them. Each test works on
a tenant of its own, so no saved block leaks into another test.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import one_rule, put_tenant

# Three problems (two limits out of range, a regex RE2 refuses) and one
# Cortex limit the scheduler ignores.
BROKEN = (
    "banner:\n"
    "  max_queriers_per_tenant: -1\n"
    "  max_query_capacity: 7\n"
    "  ingestion_rate: 350000\n"
    "  query_priority:\n"
    "    enabled: true\n"
    "    priorities:\n"
    "    - priority: 5\n"
    "      query_attributes:\n"
    "      - regex: (\n"
)
# Valid, with two ignored limits.
FIXED = (
    "banner:\n  max_queriers_per_tenant: 2\n  ingestion_rate: 350000\n  max_series_per_metric: 0\n"
)


@pytest.fixture(scope="module")
def banner(server: DaphneProcess) -> str:
    put_tenant(server, "banner", one_rule("^never$"))
    return "banner"


def replace_text(page: Page, text: str) -> None:
    """Select the whole YAML editor's text and type `text` over it."""
    page.locator("#yaml-editor .cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(text)


def refused_save(page: Page, tenant: str, text: str) -> None:
    page.goto(f"/tenants/{tenant}/")
    page.get_by_role("button", name="YAML", exact=True).click()
    replace_text(page, text)
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#error-summary")).to_be_visible()


def test_the_error_summary_goes_once_the_text_it_counted_is_fixed(page: Page, banner: str) -> None:
    refused_save(page, banner, BROKEN)
    summary = page.locator("#error-summary")
    expect(summary).to_have_text("Nothing was saved: 3 problems. Each is shown at its line.")
    expect(page.locator("#yaml-problems li")).to_have_count(3)
    # One problem fixed: the summary counts the text now, not the save.
    replace_text(page, BROKEN.replace("max_query_capacity: 7", "max_query_capacity: 0.5"))
    expect(summary).to_have_text("This draft has 2 problems. Each is shown at its line.")
    replace_text(page, FIXED.replace("2\n", "-1\n", 1))
    expect(summary).to_have_text("This draft has 1 problem. It is shown at its line.")
    replace_text(page, FIXED)
    expect(page.locator("#yaml-problems li")).to_have_count(0)
    expect(summary).to_be_hidden()


def test_the_unused_limits_notice_lists_what_the_gutter_marks_as_it_is_typed(
    page: Page, banner: str
) -> None:
    refused_save(page, banner, BROKEN)
    notice = page.locator("#unused-limits")
    expect(notice).to_have_text(
        "Not used here: the scheduler ignores 1 Cortex limit of the pasted block, "
        "so it is not saved: ingestion_rate (line 4)."
    )
    replace_text(page, FIXED)
    expect(page.locator("#yaml-editor .cm-lint-marker-info")).to_have_count(2)
    expect(notice).to_have_text(
        "Not used here: the scheduler ignores 2 Cortex limits of the pasted block, "
        "so they are not saved: ingestion_rate (line 3), max_series_per_metric (line 4)."
    )
    replace_text(page, "banner:\n  max_queriers_per_tenant: 2\n")
    expect(notice).to_be_hidden()


def test_a_limit_typed_in_a_clean_block_gets_the_notice_as_well_as_the_mark(
    page: Page, banner: str
) -> None:
    page.goto(f"/tenants/{banner}/")
    page.get_by_role("button", name="YAML", exact=True).click()
    notice = page.locator("#unused-limits")
    expect(notice).to_be_hidden()
    replace_text(page, "banner:\n  max_queriers_per_tenant: 2\n  ingestion_rate: 10\n")
    expect(notice).to_have_text(
        "Not used here: the scheduler ignores 1 Cortex limit of the pasted block, "
        "so it is not saved: ingestion_rate (line 3)."
    )
