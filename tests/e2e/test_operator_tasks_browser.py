"""An operator's tasks end to end, in Chromium: where they broke for a keyboard or a phone.

Reading a busy queue from the keyboard, the focused request is dispatched
and then done under the pointer; testing a rule change and simulating it
in a 400 px window, the answers' tables must still read; a config's hit
counts say how long they were counted.
"""

from __future__ import annotations

import re
import time

from playwright.sync_api import Browser, Page, StorageState, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic, browser_tab
from tests.e2e.drill_pages import away_from_the_list, open_drill

REGEX = "query_priority.priorities[0].query_attributes[0].regex"
# Long enough that the dry run's Examples column wants most of a narrow window.
LONG = 'sum by (job) (rate(http_requests_total{job="api-server",handler="/api/v1/query"}[5m]))'

# For each dry-run outcome cell ("priority 5"): how many lines its first word takes.
WORD_LINES = """() => Array.from(document.querySelectorAll(".dry-run-changes td.outcome"), (td) => {
  const range = document.createRange();
  range.setStart(td.firstChild, 0);
  range.setEnd(td.firstChild, td.textContent.indexOf(" "));
  return new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top))).size;
})"""


def serve(traffic: Traffic, tenant: str, query: str, count: int) -> None:
    """`count` requests of `tenant` sent and answered (the scheduler counted and sampled them)."""
    with traffic.queriers(f"served-{tenant}", 1, latency=lambda _: 0.01) as (querier,):
        traffic.enqueue(tenant, query, count=count)
        deadline = time.monotonic() + 15
        while querier.served < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert querier.served == count


def test_the_keyboard_stays_in_the_drill_list_as_the_focused_request_runs_and_leaves(
    page: Page, traffic: Traffic
) -> None:
    for query in ("vector(1)", "vector(2)", "vector(3)"):
        traffic.enqueue("keep-focus", query)
    open_drill(page, "keep-focus")
    rows = page.locator("#drill-rows > li")
    expect(rows).to_have_count(3)
    first = page.locator("#drill-rows > li", has_text="vector(1)")
    first.locator(".explain-one").focus()
    # A querier takes all three (it has at least 4 workers): vector(1) is done
    # in a second, the others a few seconds later.
    with traffic.queriers("kf", 1, latency=lambda m: 1.0 if m["query"] == "vector(1)" else 4.0):
        # Running, its row keeps the focus.
        expect(page.locator("#drill-rows > li.running")).to_have_count(3)
        expect(first.locator(".explain-one")).to_be_focused()
        # Done, its row holds its place while it has the focus, saying it left
        # (drill_list.js's hold): the keyboard is never dropped to the body.
        expect(first.locator(".wait")).to_have_text("left the queue")
        expect(first.locator(".explain-one")).to_be_focused()
        # Focus and pointer off the list, it catches up: every request done.
        away_from_the_list(page)
        expect(rows).to_have_count(0, timeout=15_000)


def test_a_dry_run_in_a_400_px_window_wraps_its_priorities_between_words(
    browser: Browser, server: DaphneProcess, signed_in: StorageState, traffic: Traffic
) -> None:
    serve(traffic, "acme", LONG, 4)
    with browser_tab(browser, server, width=400, height=900, storage_state=signed_in) as tab:
        tab.goto("/tenants/acme/")
        tab.locator(f'[name="{REGEX}"]').fill("http_requests")
        tab.get_by_role("button", name="Test against recent traffic").click()
        outcomes = tab.locator(".dry-run-changes td.outcome")
        expect(outcomes).to_have_text(["priority 0", "priority 5"])
        # "priority" whole on one line, not "priorit" / "y 0".
        assert tab.evaluate(WORD_LINES) == [1, 1]


def test_a_simulations_tables_in_a_400_px_window_show_every_column(
    browser: Browser, server: DaphneProcess, signed_in: StorageState
) -> None:
    with browser_tab(browser, server, width=400, height=900, storage_state=signed_in) as tab:
        tab.goto("/simulate/")
        tab.get_by_label("Traffic").select_option("scenario:cortex-seed")
        tab.get_by_role("button", name="Simulate", exact=True).click()
        live = tab.locator("#col-live")
        expect(live).to_contain_text("ingester-and-store-gateway", timeout=60_000)
        # The component's name wraps; kept on one line it pushed max and count
        # out of the box's view, to be found only by scrolling it sideways.
        widths = tab.evaluate(
            "Array.from(document.querySelectorAll('.result-body'),"
            " (b) => b.scrollWidth - b.clientWidth)"
        )
        assert widths == [0, 0]


def test_a_young_configs_hit_counts_say_how_long_they_were_counted(
    page: Page, traffic: Traffic
) -> None:
    serve(traffic, "acme", "up", 2)
    page.goto("/tenants/acme/")
    # acme's one rule (^never$) takes nothing: its default took them all, in
    # the seconds this module's server has run. Without the span, "1h" and
    # "since this version" read as an hour and as all a long-saved rule took.
    expect(page.locator('[data-hits="default"]')).to_have_text(
        re.compile(
            r"^took in the last 5 min: \d+ · last hour: \d+ · since this version: \d+ "
            r"\(over the \d+ s counted so far\)$"
        )
    )
