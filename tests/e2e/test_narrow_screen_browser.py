"""Every dashboard page in a 400 px wide window: a phone, or an on-call operator's split screen.

The module has its own server and browser window (400 x 800), logged in as
the editor (tests/e2e/conftest.py), and a tenant whose ID and rules are as
long as real ones get, with two revisions, queued requests and a querier
busy with some of them. On every page: the page never scrolls sideways,
wide tables, diffs and code scroll in their own box, and the page's buttons
are whole inside the window and take a click (nothing covers them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import Browser, Locator, Page, StorageState, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic, browser_tab, put_tenant

WIDTH = 400
# As long as tenant IDs get in a multi-cluster setup: no space to wrap at.
LONG = (
    "tenant-7f3e9a2c-4b1d-4e8f-9a6b-2c5d8e1f3a7b.eu-west-1"
    ".production.metrics-platform.long-running-analytics"
)
QUERY = (
    'sum(rate(http_requests_total{job=~"api-gateway-very-long-job-name-.*",'
    'cluster="prod-eu-west-1-primary"}[5m])) by (le, handler, method, status_code)'
)
CONFIG: dict[str, object] = {
    "max_queriers_per_tenant": 3,
    "query_priority": {
        "enabled": True,
        "default_priority": 1,
        "priorities": [
            {
                "priority": 8,
                "reserved_queriers": 1,
                "query_attributes": [
                    {
                        "regex": r'^sum\(rate\(http_requests_total\{job=~"api-gateway',
                        "user_agent_regex": "grafana/.*",
                        "time_window": {"start": "12h", "end": "0s"},
                    }
                ],
            },
            {"priority": 3, "query_attributes": [{"regex": "^count.*"}]},
        ],
    },
    "query_rejection": {
        "enabled": True,
        "query_attributes": [{"regex": "^very_expensive_query_never_to_run_in_production_.*$"}],
    },
}
# The second revision: more queriers and a regex too long for any window.
UPDATE = f"""
import json
from api.store import services
from api.store.models import ConfigRevision
config = json.loads({json.dumps(CONFIG)!r})
config["max_queriers_per_tenant"] = 5
config["query_priority"]["priorities"][1]["query_attributes"][0]["regex"] = (
    "^count_over_time.*a-regex-far-longer-than-before-so-that-its-diff-line-is-wider-than-a-phone$")
services.tenant_put(tenant_id={LONG!r}, config=config, expected_version=services.ANY_VERSION,
    author=None, source="cli", message="widen the count rule and give the tenant more queriers")
revisions = ConfigRevision.objects.filter(key={LONG!r}).order_by("pk")
print(json.dumps(list(revisions.values_list("pk", flat=True))))
"""


@dataclass(frozen=True)
class Site:
    """What the module made: the long tenant's two revisions (their pks), oldest first."""

    revisions: list[int]


@pytest.fixture(scope="module")
def site(server: DaphneProcess, traffic: Traffic) -> Iterator[Site]:
    put_tenant(server, LONG, CONFIG)
    out = server.run_python(UPDATE)
    revisions = json.loads(out.strip().splitlines()[-1])
    assert len(revisions) == 2
    traffic.enqueue(LONG, query=QUERY, count=6)
    traffic.enqueue("acme", count=3)
    traffic.enqueue("gold", query="critical_alerts", count=2)
    # Two workers hold two requests for the whole module: "Longest running"
    # lists them, and the tree still has every tenant's queue.
    querier = traffic.querier(
        "querier-eu-west-1-production-0123456789", workers=2, latency=lambda _: 300.0
    )
    try:
        yield Site(revisions)
    finally:
        traffic.close(querier)


@pytest.fixture(scope="module")
def narrow(
    browser: Browser, server: DaphneProcess, signed_in: StorageState, site: Site
) -> Iterator[Page]:
    """The module's own 400 px window, logged in as the editor."""
    with browser_tab(browser, server, width=WIDTH, height=800, storage_state=signed_in) as tab:
        yield tab


# How wide the page is against the window, and each wide table, diff or
# block of code that would reach past the window: it must be clipped by a
# box of its own that scrolls (overflow-x auto or scroll) and fits the window.
LAYOUT = """() => {
  const W = window.innerWidth;
  const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
    + (typeof el.className === "string" && el.className
      ? "." + el.className.trim().split(/\\s+/).join(".") : "");
  const unscrolled = [];
  let scrolling = 0;
  for (const el of document.querySelectorAll("table, .ydiff, pre, .cm-content")) {
    const r = el.getBoundingClientRect();
    if (!r.width || r.left + Math.max(el.scrollWidth, r.width) <= W + 1) continue;
    let box = el;
    while (box && getComputedStyle(box).overflowX === "visible") box = box.parentElement;
    const ok = box && ["auto", "scroll"].includes(getComputedStyle(box).overflowX)
      && box.getBoundingClientRect().right <= W + 1;
    if (ok) scrolling += 1; else unscrolled.push(name(el));
  }
  return {
    page: document.documentElement.scrollWidth, window: W, unscrolled, scrolling,
  };
}"""


def fits_the_window(page: Page) -> int:
    """Assert that the page does not scroll sideways and that nothing wide is cut off
    or widens it; the count of wide tables, diffs and code boxes that scroll in place."""
    layout = page.evaluate(LAYOUT)
    assert layout["page"] <= layout["window"], f"{page.url} scrolls sideways: {layout}"
    assert layout["unscrolled"] == [], f"{page.url}: wide and not in a scrolling box: {layout}"
    return int(layout["scrolling"])


# The element scrolled into view, its box, and whether a click at its centre
# reaches it (the centre of its first line, for a link that wraps).
REACH = """(el) => {
  el.scrollIntoView({ block: "center", inline: "nearest" });
  const r = el.getBoundingClientRect();
  const first = el.getClientRects()[0] || r;
  const hit = document.elementFromPoint(first.left + first.width / 2, first.top + first.height / 2);
  return { left: r.left, right: r.right, width: r.width, height: r.height,
           clickable: hit !== null && (el === hit || el.contains(hit)) };
}"""


def in_reach(*controls: Locator) -> None:
    """Each control shows, whole across the window's width, and takes a click at its centre."""
    for control in controls:
        expect(control).to_be_visible()
        box = control.evaluate(REACH)
        where = f"{control}: {box}"
        assert box["width"] > 0 and box["height"] > 0, where
        assert box["left"] >= 0 and box["right"] <= WIDTH, where
        assert box["clickable"], where


def top_bar(page: Page) -> list[Locator]:
    """Every page's links and Log out: reachable on every page."""
    nav = page.get_by_role("navigation", name="Main")
    links = [
        nav.get_by_role("link", name=name, exact=True)
        for name in ("Inspector", "Tenants", "History", "Settings", "Simulate", "API")
    ]
    return [*links, page.get_by_role("button", name="Log out")]


def test_the_inspector_fits_400_px_with_its_toolbar_tree_and_cards_in_reach(
    narrow: Page,
) -> None:
    page = narrow
    page.goto("/")
    expect(page.locator("#live-state")).to_have_text("live")
    tenant_row = page.locator(f'#tree [data-key="t:{LONG}"] > .row')
    expect(tenant_row.locator(".drill")).to_be_visible()
    expect(page.locator("#longest li").first).to_be_visible()
    fits_the_window(page)
    in_reach(
        *top_bar(page),
        page.get_by_role("button", name="Pause"),
        page.locator(".projection .seg").first,
        page.locator(".projection .seg").last,
        page.locator("#layout-switch"),
        page.get_by_role("searchbox", name="Search tenants"),
        page.get_by_role("button", name="Previous page"),
        page.get_by_role("button", name="Next page"),
        tenant_row.locator(".drill"),
        tenant_row.locator(".count"),
        tenant_row.locator(".wait"),
        page.locator("#longest .link").first,
    )
    # The long ID wraps onto its second line inside its row, then ends in an ellipsis.
    name = tenant_row.locator(".name")
    assert name.evaluate("(el) => el.getBoundingClientRect().right") <= WIDTH
    expect(name).to_have_text(LONG)


def test_the_drill_down_of_a_long_tenant_fits_400_px_with_its_filters_and_cancels_in_reach(
    narrow: Page,
) -> None:
    page = narrow
    page.goto("/")
    expect(page.locator("#live-state")).to_have_text("live")
    page.locator(f'#tree [data-key="t:{LONG}"] > .row .drill').click()
    rows = page.locator("#drill-rows .drill-row")
    expect(rows.first).to_be_visible()
    rows.first.locator(".expand").click()
    expect(rows.first.locator(".full pre")).to_have_text(QUERY)
    fits_the_window(page)
    in_reach(
        page.get_by_role("button", name="Close the requests panel"),
        page.get_by_role("searchbox", name="Search query text"),
        page.get_by_label("State", exact=True),
        page.get_by_label("Waited ≥"),
        page.get_by_role("button", name="Cancel matching…"),
        rows.first.get_by_role("button", name="Cancel…"),
        rows.first.locator(".expand"),
        rows.first.locator(".full pre"),
    )
    # A running row's "ran … · waited …" is the longest: it wraps rather than
    # run under the row's buttons, where its end was hidden.
    expect(page.locator("#drill-rows .drill-row.running")).not_to_have_count(0)
    overlaps = rows.evaluate_all(
        """(rows) => rows.map((row) => {
          const wait = row.querySelector(".wait"), acts = row.querySelector(".acts");
          const [w, a] = [wait.getBoundingClientRect(), acts.getBoundingClientRect()];
          const clear = w.right <= a.left + 0.5 || w.bottom <= a.top + 0.5;
          return clear && wait.scrollWidth <= wait.clientWidth + 0.5 ? null : wait.textContent;
        }).filter((text) => text !== null)"""
    )
    assert overlaps == []
    page.get_by_role("button", name="Close the requests panel").click()
    expect(page.locator("#drill")).to_be_hidden()


def test_the_layout_switch_and_request_dialogs_fit_400_px_with_both_buttons_in_reach(
    narrow: Page,
) -> None:
    page = narrow
    page.goto("/")
    expect(page.locator("#live-state")).to_have_text("live")
    page.locator("#layout-switch").click()
    dialog = page.locator("#layout-dialog")
    expect(dialog).to_be_visible()
    fits_the_window(page)
    in_reach(dialog.locator("button.primary"), dialog.get_by_role("button", name="Cancel"))
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()

    page.locator("#longest .link").first.click()
    request = page.locator("#request-dialog")
    expect(request).to_be_visible()
    expect(request.locator("#request-query")).to_have_text(QUERY)
    fits_the_window(page)
    in_reach(
        request.get_by_role("button", name="Cancel this request…"),
        request.get_by_role("button", name="Close"),
    )
    request.get_by_role("button", name="Close").click()
    expect(request).to_be_hidden()


# The table's display, and its wrapper's: whether it scrolls, and how far
# it moved when told to scroll to its end.
SCROLLED = """(table) => {
  const box = table.parentElement;
  box.scrollLeft = box.scrollWidth;
  const scrolled = box.scrollLeft;
  box.scrollLeft = 0;
  return { display: getComputedStyle(table).display, box: box.className,
           overflowX: getComputedStyle(box).overflowX, scrolled };
}"""


def test_the_tenant_list_scrolls_its_table_in_its_own_box_at_400_px(narrow: Page) -> None:
    page = narrow
    page.goto("/tenants/")
    table = page.locator("table.list")
    expect(table.get_by_role("link", name=LONG)).to_be_visible()
    assert fits_the_window(page) >= 1  # eight columns do not fit 400 px: the table scrolls
    # A table still (a block is no table to a screen reader): its wrapper scrolls.
    scroll = table.evaluate(SCROLLED)
    assert scroll["display"] == "table", scroll
    assert scroll["box"] == "table-scroll" and scroll["overflowX"] == "auto", scroll
    assert scroll["scrolled"] > 0, scroll
    in_reach(
        *top_bar(page),
        page.get_by_role("searchbox", name="Search tenants"),
        page.get_by_role("button", name="Search"),
        page.get_by_role("link", name="New tenant"),
        table.get_by_role("link", name=LONG),
        table.get_by_role("link", name="acme", exact=True),
    )


def test_the_tenant_editor_form_fits_400_px_with_every_rule_button_in_reach(
    narrow: Page,
) -> None:
    page = narrow
    page.goto(f"/tenants/{LONG}/")
    expect(page.locator("h1")).to_contain_text(LONG)
    fits_the_window(page)
    in_reach(
        *top_bar(page),
        page.get_by_role("button", name="Form", exact=True),
        page.get_by_role("button", name="YAML", exact=True),
        page.get_by_label("Max queriers per tenant (0 = all: no shuffle shard)"),
        page.get_by_role("button", name="Move rule 2 up"),
        page.get_by_role("button", name="Move rule 1 down"),
        page.get_by_role("button", name="Remove rule 1"),
        page.locator('[name="query_priority.priorities[0].query_attributes[0].regex"]'),
        page.get_by_role("button", name="+ Attribute").first,
        page.get_by_role("button", name="+ Rule"),
        page.get_by_role("button", name="+ Rejection attribute"),
        page.get_by_label("Change note", exact=True),
        page.get_by_role("button", name="Save", exact=True),
        page.get_by_role("link", name="Discard changes"),
        page.get_by_role("button", name="Simulate this change"),
        page.get_by_label("Query (PromQL or match[] selectors)"),
        page.get_by_role("button", name="Explain", exact=True),
        page.locator("#dry-run-button"),
    )
    page.get_by_label("Query (PromQL or match[] selectors)").fill(QUERY)
    page.get_by_label("User-Agent", exact=True).fill("grafana/10.4")
    page.get_by_role("button", name="Explain", exact=True).click()
    expect(page.locator("#explain-priority")).to_have_text("8")
    fits_the_window(page)
    page.locator("#dry-run-button").click()
    expect(page.locator("#dry-run-output .dry-run-result")).not_to_contain_text("Press the button")
    fits_the_window(page)


def test_the_yaml_view_scrolls_long_lines_inside_the_editor_at_400_px(narrow: Page) -> None:
    page = narrow
    page.goto(f"/tenants/{LONG}/")
    page.get_by_role("button", name="YAML", exact=True).click()
    editor = page.locator("#yaml-editor")
    expect(editor.locator(".cm-line").first).to_have_text(f"{LONG}:")
    assert fits_the_window(page) >= 1  # the editor's long lines scroll in the editor
    scroller = editor.locator(".cm-scroller")
    assert scroller.evaluate("(el) => el.scrollWidth > el.clientWidth")
    in_reach(
        *top_bar(page),
        page.get_by_role("button", name="Form", exact=True),
        editor,
        page.get_by_role("button", name="Save", exact=True),
        page.get_by_role("link", name="Discard changes"),
        page.get_by_role("button", name="Simulate this change"),
        page.get_by_role("button", name="Explain", exact=True),
    )


def test_saving_a_tenant_at_400_px_shows_its_review_diff_in_a_scrolling_box_and_confirms(
    narrow: Page,
) -> None:
    page = narrow
    page.goto(f"/tenants/{LONG}/")
    page.get_by_label("Max queriers per tenant (0 = all: no shuffle shard)").fill("7")
    page.get_by_role("button", name="Save", exact=True).click()
    review = page.locator("#review")
    expect(review).to_be_visible()
    assert fits_the_window(page) >= 1  # the diff's lines are wider than the window
    diff = page.locator("#review-diff")
    assert diff.evaluate("(el) => el.scrollWidth > el.clientWidth")
    in_reach(
        review.get_by_role("button", name="Confirm and save"),
        review.get_by_role("button", name="Keep editing"),
    )
    review.get_by_role("button", name="Confirm and save").click()
    expect(page.locator(".msg-success")).to_be_visible()
    expect(page.get_by_label("Max queriers per tenant (0 = all: no shuffle shard)")).to_have_value(
        "7"
    )
    fits_the_window(page)


def test_a_new_tenant_form_fits_400_px_with_its_buttons_in_reach(narrow: Page) -> None:
    page = narrow
    page.goto("/tenants/new/")
    expect(page.get_by_role("heading", name="New tenant")).to_be_visible()
    fits_the_window(page)
    in_reach(
        *top_bar(page),
        page.get_by_label("Tenant ID"),
        page.get_by_role("button", name="YAML", exact=True),
        page.get_by_role("button", name="+ Rule"),
        page.get_by_role("button", name="+ Rejection attribute"),
        page.get_by_role("button", name="Save", exact=True),
        page.get_by_role("button", name="Simulate this change"),
        page.get_by_role("button", name="Explain", exact=True),
    )
    page.get_by_role("button", name="+ Rule").click()
    expect(page.get_by_role("button", name="Remove rule 1")).to_be_visible()
    fits_the_window(page)
    in_reach(
        page.get_by_role("button", name="Remove rule 1"),
        page.get_by_role("button", name="+ Attribute"),
        page.get_by_role("button", name="Save", exact=True),
    )


def test_history_at_400_px_keeps_its_diffs_in_their_own_scrolling_boxes(
    narrow: Page, site: Site
) -> None:
    page = narrow
    page.goto("/history/")
    latest = page.locator(f'.revision:has(a:text-is("{LONG}"))').first
    expect(latest).to_be_visible()
    assert fits_the_window(page) >= 1  # the long tenant's diff lines scroll in their box
    in_reach(
        *top_bar(page),
        page.get_by_label("Tenant", exact=True),
        page.get_by_label("Kind", exact=True),
        page.get_by_role("button", name="Filter"),
        page.get_by_role("link", name="Unified"),
        page.get_by_role("link", name="Side by side"),
        page.get_by_role("button", name="Compare selected"),
        latest.get_by_role("link", name=LONG),
        latest.get_by_role("button", name=re.compile(r"^Compare from revision")),
        latest.get_by_role("button", name=re.compile(r"^Compare to revision")),
        latest.get_by_role("button", name=re.compile(r"^Roll back revision")),
    )
    latest.get_by_text("Changed values").click()
    expect(latest.locator("table.diff")).to_be_visible()
    fits_the_window(page)
    page.get_by_role("link", name="Side by side").click()
    expect(page.locator(".ydiff.split").first).to_be_visible()
    assert fits_the_window(page) >= 1


@pytest.mark.parametrize("mode", ["unified", "split"])
def test_comparing_two_revisions_at_400_px_scrolls_only_the_diff(
    narrow: Page, site: Site, mode: str
) -> None:
    page = narrow
    first, second = site.revisions
    page.goto(f"/history/compare/?from={first}&to={second}&diff={mode}")
    expect(page.locator("#compare-what")).to_contain_text(LONG)
    assert fits_the_window(page) >= 1
    diff = page.locator("#compare-diff")
    assert diff.evaluate("(el) => el.scrollWidth > el.clientWidth")
    in_reach(
        *top_bar(page),
        page.get_by_role("link", name="‹ History"),
        page.get_by_role("link", name="Unified"),
        page.get_by_role("link", name="Side by side"),
        diff,
    )


def test_the_rollback_confirmation_at_400_px_shows_its_diff_and_both_buttons(
    narrow: Page, site: Site
) -> None:
    page = narrow
    page.goto(f"/history/{site.revisions[-1]}/rollback/")
    expect(page.locator("#rollback-diff")).to_be_visible()
    assert fits_the_window(page) >= 1
    in_reach(
        *top_bar(page),
        page.get_by_role("link", name="‹ History"),
        page.get_by_role("link", name="Side by side"),
        page.get_by_label("Change note (optional)"),
        page.locator("#confirm-rollback"),
        page.get_by_role("link", name="Cancel", exact=True),
    )


def test_settings_at_400_px_fit_and_their_review_keeps_confirm_in_reach(narrow: Page) -> None:
    page = narrow
    page.goto("/settings/")
    fits_the_window(page)
    in_reach(
        *top_bar(page),
        page.locator("#s-layout"),
        page.locator("#s-actor_path_header"),
        page.get_by_label("Change note", exact=True),
        page.get_by_role("button", name="Save settings"),
        page.get_by_role("button", name="Simulate switching layout / component selection"),
    )
    page.locator("#s-stuck_threshold").fill("2m")
    page.get_by_role("button", name="Save settings").click()
    review = page.locator("#review")
    expect(review).to_be_visible()
    fits_the_window(page)
    in_reach(
        review.get_by_role("button", name="Confirm and save"),
        review.get_by_role("link", name="Discard changes"),
    )
    review.get_by_role("link", name="Discard changes").click()  # the settings stay as they are
    expect(page.locator("#review")).to_have_count(0)


def test_the_what_if_page_at_400_px_stacks_its_columns_and_its_results_fit(
    narrow: Page,
) -> None:
    page = narrow
    page.goto("/simulate/")
    expect(page.locator("#live-config")).not_to_be_empty()
    fits_the_window(page)
    in_reach(
        *top_bar(page),
        page.get_by_label("Traffic", exact=True),
        page.get_by_label("Arrivals ×"),
        page.locator("#live-config"),
        page.get_by_label("Layout", exact=True),
        page.locator("#sim-proposed"),
        page.get_by_role("button", name="Simulate", exact=True),
        page.get_by_role("button", name="Cancel", exact=True),
    )
    # The columns are one under the other: Proposed below Live, not beside it.
    live, proposed = (
        page.locator(".config-col").nth(i).evaluate("(el) => el.getBoundingClientRect().top")
        for i in (0, 1)
    )
    assert proposed > live
    page.get_by_label("Traffic").select_option("scenario:cortex-seed")
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-verdicts li").first).to_be_visible(timeout=60_000)
    expect(page.locator("#chart-queue canvas")).to_have_count(1)
    fits_the_window(page)
    in_reach(
        page.locator("#col-live table").first,
        page.locator("#col-proposed table").first,
        page.locator("#chart-priority"),
        page.locator("#chart-queue"),
        page.get_by_role("button", name="Simulate", exact=True),
    )


def test_growing_the_window_to_1500_px_brings_back_the_wide_layout(narrow: Page) -> None:
    page = narrow
    page.goto(f"/tenants/{LONG}/")
    try:
        page.set_viewport_size({"width": 1500, "height": 1000})
        bar = page.locator(".topbar").bounding_box()
        assert bar is not None and bar["height"] == 48  # one line, as before
        form = page.locator("#tenant-form").bounding_box()
        explain = page.locator("#explain").bounding_box()
        assert form is not None and explain is not None
        assert explain["x"] >= form["x"] + form["width"]  # beside the form, not under it
        page.goto("/")
        expect(page.locator("#live-state")).to_have_text("live")
        row = page.locator(f'#tree [data-key="t:{LONG}"] > .row')
        count, bar_box = (row.locator(s).bounding_box() for s in (".count", ".bar"))
        assert count is not None and bar_box is not None
        assert bar_box["y"] < count["y"] + count["height"]  # the bar on the name's line
        page.goto("/tenants/")
        scroll = page.locator("table.list").evaluate(SCROLLED)
        assert scroll["overflowX"] == "visible" and scroll["scrolled"] == 0, scroll  # it fits
    finally:
        page.set_viewport_size({"width": WIDTH, "height": 800})
