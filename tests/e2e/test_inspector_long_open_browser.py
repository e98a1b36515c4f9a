"""The inspector left open for a long time in Chromium: what it holds must not grow with time."""

from __future__ import annotations

from playwright.sync_api import Page, expect

# LiveClient's MEASURES_KEPT (dashboard/static/dashboard/live.js).
MEASURES_KEPT = 1000


def test_a_live_client_keeps_a_bounded_number_of_frame_timings(page: Page) -> None:
    # A client on its own (no socket, no other client timing frames on the
    # page), fed more frames than it keeps timings of: a tab open for a day
    # applies hundreds of thousands.
    page.goto("/healthz")
    held = page.evaluate(
        """async (frames) => {
          const { LiveClient } = await import('/static/dashboard/live.js');
          const none = () => {};
          const client = new LiveClient('/nowhere/', { params: {}, onFrame: none, onState: none });
          for (let seq = 1; seq <= frames; seq++) {
            client.receive(JSON.stringify({ type: 'snapshot', epoch: 1, seq, chart: [] }));
          }
          return {
            frames: client.frames,
            measures: performance.getEntriesByName('qi-apply').length,
            marks: performance.getEntriesByName('qi-apply-start').length,
          };
        }""",
        2 * MEASURES_KEPT + 500,
    )
    assert held == {"frames": 2 * MEASURES_KEPT + 500, "measures": 500, "marks": 0}


def test_the_inspector_page_keeps_no_mark_per_frame(page: Page) -> None:
    page.goto("/")
    expect(page.locator("#live-state")).to_have_text("live")
    page.wait_for_function("() => window.inspectorClient.frames >= 3")
    counts = page.evaluate(
        """() => ({
          frames: window.inspectorClient.frames,
          measures: performance.getEntriesByName('qi-apply').length,
          marks: performance.getEntriesByName('qi-apply-start').length,
        })"""
    )
    assert counts["marks"] == 0
    assert 0 < counts["measures"] <= counts["frames"]
