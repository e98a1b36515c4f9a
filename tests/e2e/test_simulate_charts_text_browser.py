"""The Simulate page's charts in words, in Chromium: each carries the data it draws.

A screen reader or keyboard user reads under each chart a sentence of its
landmarks and, opened, a table of its points, both from the answer the
chart is drawn from: checked here against that answer and the plot's data.
"""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, expect


def _run_seed_scenario(page: Page, duration: str) -> dict[str, Any]:
    page.goto("/simulate/")
    page.get_by_label("Traffic").select_option("scenario:cortex-seed")
    page.get_by_label("Duration in seconds (blank: the scenario's 300)").fill(duration)
    # One querier: the live queue grows, so its series has a peak to name;
    # the proposed side refuses all but 2 outstanding, so its queue stays short.
    page.get_by_label("Queriers (blank: the scenario's 4)").fill("1")
    page.locator("#sim-proposed").fill(
        '{"settings": {}, "tenants": {"tenant-1": {"max_outstanding_requests_per_tenant": 2}}}'
    )
    with page.expect_response(re.compile(r"/api/v1/simulate/$")) as answered:
        page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-status")).to_contain_text("Done in", timeout=30_000)
    answer: dict[str, Any] = answered.value.json()
    return answer


def _instant(t: float) -> str:
    """As the page spells an instant: no more digits than the server's, Prometheus units."""
    digits = next((d for d in (0, 1, 2) if abs(round(t, d) - t) < 1e-9), 3)
    if t < 60:
        return "0s" if t == 0 else f"{t:.{digits}f}s"
    total = round(t * 1000)
    parts = []
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        n, total = divmod(total, size)
        if n:
            parts.append(f"{n}{unit}")
    return "".join(parts)


def _peak(series: dict[str, list[Any]]) -> tuple[int, float]:
    values = series["queue_length"]
    at = values.index(max(values))
    return values[at], series["t"][at]


def test_the_queue_chart_is_described_by_its_peak_and_last_sample_and_tabled(
    page: Page,
) -> None:
    answer = _run_seed_scenario(page, "120")
    chart = page.locator("#chart-queue")
    expect(chart).to_have_attribute("role", "img")
    expect(chart).to_have_accessible_name("Queue length over simulated time")
    summary = page.locator("#chart-queue-summary")
    sentences = []
    for side, name in (("live", "Live"), ("proposed", "Proposed")):
        series = answer[side]["series"]
        peak, when = _peak(series)
        first = "nothing queued at any sample"
        if peak:
            first = f"peak {peak} queued at {_instant(when)}"
        end = _instant(series["t"][-1])
        left = series["queue_length"][-1]
        last = f"{left} never served" if left else "nothing left queued"
        sentences.append(f"{name}: {first}; the last request done at {end}, {last}.")
    expect(summary).to_have_text(" ".join(sentences))
    expect(chart).to_have_accessible_description(" ".join(sentences))

    table = page.locator("#chart-queue-data table")
    expect(table).to_be_hidden()
    page.get_by_text("Queue length as a table").click()
    expect(table).to_be_visible()
    head = table.locator("thead th")
    expect(head).to_have_text(["simulated time", "live, queued", "proposed, queued"])
    rows = table.locator("tbody tr")
    count = rows.count()
    assert 10 <= count <= 60, count
    # The plot's instants are both sides' own: each run's last sample is at
    # its own end, so neither side's end is drawn at the other's instant;
    # after its end a side's queue stays as its last sample left it.
    plotted = chart.evaluate("(el) => el.plot.data")
    assert plotted[0] == sorted(
        set(answer["live"]["series"]["t"]) | set(answer["proposed"]["series"]["t"])
    )
    by_time = {
        side: dict(
            zip(answer[side]["series"]["t"], answer[side]["series"]["queue_length"], strict=True)
        )
        for side in ("live", "proposed")
    }

    def drawn(side: str, t: float) -> int | None:
        series = answer[side]["series"]
        return series["queue_length"][-1] if t > series["t"][-1] else by_time[side].get(t)

    times = {_instant(t): t for side in by_time.values() for t in side}
    for cells in table.locator("tbody tr").evaluate_all(
        "(rows) => rows.map((r) => [...r.cells].map((c) => c.textContent))"
    ):
        t = times[cells[0]]
        at = plotted[0].index(t)
        for k, (side, cell) in enumerate(
            zip(("live", "proposed"), cells[1:], strict=True), start=1
        ):
            value = drawn(side, t)
            assert plotted[k][at] == value
            assert re.sub(r" \(.*\)$", "", cell) == ("–" if value is None else str(value)), cells
    # Each side's peak is a row, marked (a queue never used has none to mark).
    for side, column in (("live", 2), ("proposed", 3)):
        peak, when = _peak(answer[side]["series"])
        if not peak:
            continue
        row = table.locator("tbody tr", has=page.locator(f'th:text-is("{_instant(when)}")'))
        expect(row.locator(f"td:nth-child({column})")).to_have_text(f"{peak} (peak)")


def test_the_priority_chart_is_tabled_from_the_same_p99s(page: Page) -> None:
    answer = _run_seed_scenario(page, "60")
    levels = sorted(
        set(answer["live"]["by_priority"]) | set(answer["proposed"]["by_priority"]),
        key=int,
        reverse=True,
    )
    page.get_by_text("p99 by priority as a table").click()
    table = page.locator("#chart-priority-data table")
    expect(table.locator("tbody th")).to_have_text([f"priority {p}" for p in levels])
    expect(page.locator("#chart-priority")).to_have_accessible_description(
        re.compile(r"^The highest p99 of each side: live \d")
    )
    # The same numbers the result columns print, in the same units.
    first = table.locator("tbody tr").first
    live_p99 = first.locator("td").first.inner_text()
    expect(page.locator("#col-live table").first.locator("tbody tr").first).to_contain_text(
        live_p99
    )


def test_switching_back_to_recent_traffic_shows_the_saved_config_not_the_scenarios(
    page: Page,
) -> None:
    _run_seed_scenario(page, "30")
    box = page.locator("#live-config")
    expect(box).to_contain_text('"tenant-1"')  # the scenario's own config
    page.get_by_label("Traffic").select_option("recent:900")
    expect(page.locator("#live-help")).to_contain_text("The saved config")
    expect(box).not_to_contain_text('"tenant-1"')
    expect(box).to_contain_text('"settings"')
    page.get_by_label("Traffic").select_option("scenario:mimir-slow-consumer")
    expect(box).to_have_text("")  # not run yet: nothing to show, not another's config
    page.get_by_label("Traffic").select_option("scenario:cortex-seed")
    expect(box).to_contain_text('"tenant-1"')


def test_a_run_refused_after_one_that_ran_leaves_no_old_verdict_on_the_page(page: Page) -> None:
    _run_seed_scenario(page, "30")
    results = page.locator("#sim-results")
    expect(results).to_be_visible()
    page.get_by_label("Arrivals ×").fill("1000")
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-status")).to_have_text("Nothing was simulated: fix the fields below.")
    expect(results).to_be_hidden()
    page.get_by_label("Arrivals ×").fill("1")
    page.get_by_label("Queriers (blank: the scenario's 4)").fill("")
