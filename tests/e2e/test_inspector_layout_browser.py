"""The inspector's layout in Chromium at the window sizes operators use, on a busy queue.

One server, browser and login per module; the `inspector` fixture fills the
queue once, and the tests resize the window and read the boxes the page draws.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import Traffic


@pytest.fixture(scope="module")
def inspector(page: Page, traffic: Traffic) -> Page:
    """The module's window on the inspector, its queue holding work for every component.

    No test leaves the inspector, so the module opens it once.
    """
    page.goto("/")
    for i, tenant in enumerate(["analytics", "billing", "checkout"]):
        traffic.enqueue(tenant, count=2 + 3 * i)  # the last ten minutes: both components
    traffic.enqueue("checkout", query="max(up)", start=0, end=3600, count=4)
    traffic.enqueue("search", query="max(up)", start=0, end=60, count=2)
    return page


def test_the_inspector_opens_live_on_a_queue_with_every_component(inspector: Page) -> None:
    page = inspector
    expect(page.locator("#live-state")).to_have_text("live")
    expect(page.get_by_role("treeitem", name=re.compile(r"^checkout"))).to_be_visible()
    page.wait_for_function("() => document.getElementById('chart-wait').plot")


# The wait chart fits its box and overlaps nothing, the wait tables included.
CHART_FITS = """() => {
  const box = document.getElementById("chart-wait");
  const plot = box.plot;
  // clientWidth rounds the box's width where the plot takes it floored.
  if (!plot || Math.abs(plot.width - box.clientWidth) > 1) return false;
  const r = plot.root.getBoundingClientRect();
  const w = document.querySelector(".waits").getBoundingClientRect();
  return r.right <= w.left || w.right <= r.left || r.bottom <= w.top || w.bottom <= r.top;
}"""


def test_the_charts_follow_their_box_as_the_window_grows_and_shrinks(inspector: Page) -> None:
    page = inspector
    widths = []
    for width, height in ((1920, 1080), (1280, 800), (1024, 768), (1500, 1000)):
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_function(CHART_FITS)
        widths.append(page.evaluate("document.getElementById('chart-wait').plot.width"))
    assert widths[0] > widths[1] and widths[3] > widths[1]


# Each card's box in the page: [left, top, right, bottom].
BOXES = """(selectors) => selectors.map((s) => {
  const r = document.querySelector(s).getBoundingClientRect();
  return [r.left, r.top + scrollY, r.right, r.bottom + scrollY];
})"""


def test_under_1200_px_the_charts_and_the_wait_tables_stack_in_one_column(inspector: Page) -> None:
    page = inspector
    page.set_viewport_size({"width": 1100, "height": 800})
    page.wait_for_function(CHART_FITS)
    charts, waits, tree = page.evaluate(BOXES, [".charts", ".waits", ".tree-card"])
    assert waits[1] >= charts[3]  # below the charts, not beside them
    assert charts[0] == tree[0] and charts[2] == tree[2]  # as wide as the tree card
    page.set_viewport_size({"width": 1500, "height": 1000})


# The wait tables as a busy scheduler fills them, every row as wide as a row
# gets (format.js formatTiming): "12.3ms", a wait of days, a five-digit
# count. The rows are dropped at the next frame after Resume (waitRows).
WIDEST_WAITS = """() => {
  const tables = {
    "wait-component": ["ingester", "ingester-and-store-gateway", "store-gateway"],
    "wait-priority": ["p0", "p1", "p2", "p3", "p5", "p10"],
  };
  for (const [id, names] of Object.entries(tables)) {
    const body = document.getElementById(id);
    body.replaceChildren(...names.map((name) => {
      const row = document.createElement("tr");
      for (const text of [name, "12.3ms", "6d23h59m", "12345"]) {
        const cell = document.createElement("td");
        cell.textContent = text;
        row.append(cell);
      }
      return row;
    }));
    body._sig = null;
  }
}"""
# Pixels of the charts card below its charts and their config changes
# line (beyond its padding), pixels
# from it down to the tree card, how much wider the page is than the window,
# and the wait table cells cut short.
SPACE = """() => {
  const card = document.querySelector(".charts");
  const box = card.getBoundingClientRect();
  const style = getComputedStyle(card);
  // The charts' boxes, not the figures': the card's grid stretches those;
  // and the config changes' line under them when it shows.
  const parts = Array.from(card.querySelectorAll(".chart, .chart-changes:not([hidden])"));
  const chartsEnd = Math.max(...parts.map((c) => c.getBoundingClientRect().bottom));
  const padding = parseFloat(style.paddingBottom) + parseFloat(style.borderBottomWidth);
  const root = document.documentElement;
  return {
    under: box.bottom - padding - chartsEnd,
    toTree: document.querySelector(".tree-card").getBoundingClientRect().top - box.bottom,
    sideways: root.scrollWidth - root.clientWidth,
    cut: Array.from(document.querySelectorAll(".waits td, .waits th"))
      .filter((el) => el.scrollWidth > el.clientWidth).map((el) => el.textContent),
  };
}"""


def test_at_1280_1500_and_1920_the_tree_follows_the_charts_and_nothing_is_cut_or_scrolls_sideways(
    inspector: Page,
) -> None:
    page = inspector
    page.get_by_role("button", name="Pause").click()  # no frame rewrites the widest rows
    try:
        page.evaluate(WIDEST_WAITS)
        for width, height in ((1280, 800), (1500, 1000), (1920, 1080)):
            page.set_viewport_size({"width": width, "height": height})
            page.wait_for_function(CHART_FITS)
            space = page.evaluate(SPACE)
            assert space["under"] == pytest.approx(0, abs=1), (width, space)
            assert space["toTree"] == pytest.approx(12, abs=1), (width, space)  # the cards' gap
            assert space["sideways"] <= 0 and space["cut"] == [], (width, space)
    finally:
        page.get_by_role("button", name="Resume").click()
        page.set_viewport_size({"width": 1500, "height": 1000})


def test_header_labels_and_tree_names_show_whole_at_1280(inspector: Page) -> None:
    page = inspector
    page.set_viewport_size({"width": 1280, "height": 800})
    page.get_by_text("component → tenant").click()
    both = page.locator('#tree [data-key="c:ingester-and-store-gateway"] > .row .name')
    expect(both).to_have_text("ingester-and-store-gateway")
    cut = page.evaluate(
        """() => Array.from(document.querySelectorAll(".fig .k, #tree .name, #tree .prios"))
          .filter((el) => el.scrollWidth > el.clientWidth || el.scrollHeight > el.clientHeight)
          .filter((el) => el.title !== el.textContent)
          .map((el) => el.textContent)"""
    )
    assert cut == []  # nothing is cut short without a title holding it whole
    fits = "(el) => el.scrollWidth <= el.clientWidth && el.scrollHeight <= el.clientHeight"
    assert both.evaluate(fits)
    for label in page.locator(".fig .k").all():
        assert label.evaluate(fits), label.text_content()
    page.get_by_text("tenant → component").click()


# Each header card's label (and the loop card's cost line, once drawn): [text, its
# height, one line's height]. The labels are blockified flex items, so a
# label on two lines is twice its line height tall.
LABEL_LINES = """() => Array.from(document.querySelectorAll(".fig .k"))
  .filter((k) => k.textContent)
  .map((k) => [k.textContent, k.getBoundingClientRect().height,
               parseFloat(getComputedStyle(k).lineHeight)])"""


def test_every_header_card_label_sits_on_one_line_at_1280_and_wider(inspector: Page) -> None:
    page = inspector
    try:
        for width, height in ((1280, 800), (1400, 900), (1920, 1080)):
            page.set_viewport_size({"width": width, "height": height})
            labels = page.evaluate(LABEL_LINES)
            assert len(labels) >= 12, labels  # twelve cards, and the loop's cost once it has one
            two_lines = [(text, h) for text, h, line in labels if h > line + 1]
            assert two_lines == [], (width, two_lines)
    finally:
        page.set_viewport_size({"width": 1500, "height": 1000})


TICKS = """async () => {
  const plot = document.getElementById("chart-wait").plot;
  const now = Math.floor(Date.now() / 1000);
  const t = [];
  for (let s = now - 300; s <= now; s++) t.push(s);
  plot.setData([t, t.map((s) => s % 7), t.map(() => 0.5)]);
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  const axis = plot.axes[0];
  const ctx = document.createElement("canvas").getContext("2d");
  ctx.font = axis.font[0];
  const left = plot.bbox.left / devicePixelRatio;
  const clipped = axis._splits.filter((s, i) => {
    const x = left + plot.valToPos(s, "x");
    const half = ctx.measureText(axis._values[i]).width / 2;
    return x - half < 0 || x + half > plot.width;
  });
  return { labels: axis._values, clipped: clipped.length };
}"""


def test_five_minutes_of_chart_tick_every_minute_with_a_24_hour_legend(inspector: Page) -> None:
    page = inspector
    page.set_viewport_size({"width": 1280, "height": 800})
    page.get_by_role("button", name="Pause").click()  # no frame redraws the test's data
    try:
        ticks = page.evaluate(TICKS)
        assert len(ticks["labels"]) >= 4, ticks
        assert all(re.fullmatch(r"\d\d:\d\d", label) for label in ticks["labels"]), ticks
        assert ticks["clipped"] == 0, ticks
        page.evaluate(
            "() => { const p = document.getElementById('chart-wait').plot;"
            " p.setCursor({ left: p.bbox.width / devicePixelRatio / 2, top: 20 }); }"
        )
        time_value = page.locator("#chart-wait .u-legend .u-series").first.locator(".u-value")
        expect(time_value).to_have_text(re.compile(r"^\d\d:\d\d:\d\d$"))
    finally:
        page.get_by_role("button", name="Resume").click()
