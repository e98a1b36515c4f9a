"""The drill-down's texts say one quantity one way, in Chromium.

A duration is spelled alike by the rows and the explain box a row's Explain
fills; the panel's querier-time line counts the running requests its rows
show. The header's usage block is built at most once a second
(api.wire.usage_block.UsagePages), the rows every tick: the inspector's
frames reach the page through a Playwright websocket route that holds the
block as it was before any request ran, as that cache can.
"""

from __future__ import annotations

import json
import re
from typing import Any

from playwright.sync_api import Page, WebSocketRoute, expect

from tests.e2e.conftest import Traffic
from tests.e2e.drill_pages import open_drill

SPELLINGS = """async () => {
  const format = await import('/static/dashboard/format.js');
  const explain = await import('/static/dashboard/drill_explain.js');
  const rows = await import('/static/dashboard/drill_rows.js');
  const ago = 2 * 86400 + 609;  // started two days, ten minutes and nine seconds before now
  const row = { api_type: "query_range", start: 1000 - ago, end: 1000, step: 90 };
  return [explain.durationText(ago), format.formatWait(ago), rows.rangeText(row, 1000),
    format.formatWait(0.3), format.formatTiming(0.0025), format.formatTiming(1.25)];
}"""


def test_a_row_and_the_explain_box_spell_a_duration_in_one_notation(page: Page) -> None:
    page.goto("/")
    box, wait, range_text, *finer = page.evaluate(SPELLINGS)
    assert box == "2d10m9s"  # what the explain box reads, to the millisecond
    assert wait == "2d10m"  # a wait that long, to the minute
    assert range_text == "query_range · 2d10m ago → now · step 1m30s"
    # Below a minute one unit with its decimals, as Go prints a duration.
    assert finer == ["300ms", "2.50ms", "1.25s"]


class HeldUsage:
    """Forwards the inspector socket both ways, every header's usage block the first one seen."""

    def __init__(self) -> None:
        self.first: Any = None

    def route(self, ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        ws.on_message(server.send)
        server.on_message(lambda message: ws.send(self._held(message)))

    def _held(self, message: str | bytes) -> str | bytes:
        frame = json.loads(message)
        stats = (frame.get("header") or {}).get("stats") or {}
        if "usage" not in stats:
            return message
        if self.first is None:
            self.first = stats["usage"]
        stats["usage"] = self.first
        return json.dumps(frame)


def test_the_panel_s_running_count_is_its_rows_not_an_older_usage_block(
    page: Page, traffic: Traffic
) -> None:
    held = HeldUsage()
    page.route_web_socket(re.compile(r"/ws/inspector/"), held.route)
    traffic.enqueue("runner", "sum(up)", count=3)
    open_drill(page, "runner")
    rows, line = page.locator("#drill-rows > li"), page.locator("#drill-usage")
    expect(rows).to_have_count(3)
    assert held.first is not None and not held.first["tenants"]  # nothing had run
    querier = traffic.querier("q-runner", workers=3, latency=lambda _: 30.0)
    try:
        expect(page.locator("#drill-rows > li.running")).to_have_count(3)
        expect(line).to_contain_text("3 running now")
        # The frame that lists them running counts them: never a line behind its rows.
        assert "held no worker." not in (line.text_content() or "")
    finally:
        traffic.close(querier)
