"""The Simulate page in Chromium: refusals made in the page, scenario knobs, the factors' group.

A press the page refuses itself (Changes not JSON, a number box it cannot
read) takes the last run's results away and marks and focuses the box, as
a server refusal does; a scenario's blank Queriers and Duration say what
they mean there, and mimir-slow-consumer, which has no duration, has no
Duration box; the service-factor boxes are read inside their group.
"""

from __future__ import annotations

import json
import re

from playwright.sync_api import Page, expect

SIMULATE = re.compile(r"/api/v1/simulate/$")


def _run_seed(page: Page) -> None:
    page.goto("/simulate/")
    page.get_by_label("Traffic").select_option("scenario:cortex-seed")
    page.get_by_label("Duration in seconds (blank: the scenario's 300)").fill("30")
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-status")).to_contain_text("Done in", timeout=30_000)
    expect(page.locator("#sim-results")).to_be_visible()


def test_changes_that_are_not_json_take_the_last_results_away_and_mark_the_box(
    page: Page,
) -> None:
    _run_seed(page)
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    changes = page.locator("#sim-proposed")
    changes.fill("{bad")
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-results")).to_be_hidden()
    expect(page.locator("#sim-status")).to_have_text(
        "Nothing was simulated: the changes are not valid JSON."
    )
    expect(changes).to_have_attribute("aria-invalid", "true")
    expect(changes).to_be_focused()
    expect(page.locator("#proposed-error")).to_be_visible()
    expect(page.locator("#proposed-error")).to_contain_text("Changes: not valid JSON (")
    expect(changes).to_have_accessible_description(re.compile(r"^Changes: not valid JSON \("))
    expect(page.locator("#sim-errors li")).to_have_text([re.compile(r"^Changes: not valid JSON")])
    assert not posts, posts
    # Put right, it runs and the marks go.
    changes.fill('{"settings": {}, "tenants": {}}')
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-status")).to_contain_text("Done in", timeout=30_000)
    expect(changes).not_to_have_attribute("aria-invalid", "true")
    expect(page.locator("#proposed-error")).to_be_hidden()
    expect(page.locator("#sim-errors")).to_be_hidden()
    expect(page.locator("#sim-results")).to_be_visible()


def test_an_unreadable_number_after_a_run_takes_its_results_away(page: Page) -> None:
    _run_seed(page)
    arrivals = page.get_by_label("Arrivals ×")
    arrivals.fill("")
    arrivals.press_sequentially("1e")
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-status")).to_have_text("Nothing was simulated: fix the fields below.")
    expect(page.locator("#sim-results")).to_be_hidden()
    expect(page.locator("#sim-errors li")).to_have_text(["Arrivals ×: not a number"])
    expect(arrivals).to_have_attribute("aria-invalid", "true")
    expect(arrivals).to_be_focused()


def test_blank_queriers_and_duration_say_what_they_mean_for_the_workload_picked(
    page: Page,
) -> None:
    page.goto("/simulate/")
    traffic = page.get_by_label("Traffic")
    duration = page.locator("#knob-duration")
    queriers = page.locator("#knob-queriers")
    traffic.select_option("recent:900")
    expect(duration).to_have_accessible_name("Duration in seconds (blank: the window)")
    expect(queriers).to_have_accessible_name("Queriers (blank: as connected)")
    traffic.select_option("scenario:cortex-seed")
    expect(duration).to_have_accessible_name("Duration in seconds (blank: the scenario's 300)")
    expect(queriers).to_have_accessible_name("Queriers (blank: the scenario's 4)")
    duration.fill("30")
    traffic.select_option("scenario:mimir-slow-consumer")
    # Every request arrives at once: there is no duration to set.
    expect(duration).to_be_hidden()
    expect(page.get_by_label("Slow share")).to_be_visible()
    expect(queriers).to_have_accessible_name("Queriers (blank: the scenario's 8)")
    with page.expect_request(SIMULATE) as sent:
        page.get_by_role("button", name="Simulate", exact=True).click()
    knobs = json.loads(sent.value.post_data or "{}")["knobs"]
    assert "duration_seconds" not in knobs, knobs  # typed for cortex-seed, hidden here
    expect(page.locator("#sim-status")).to_contain_text("Done in", timeout=30_000)
    expect(page.locator("#sim-workload-line")).to_contain_text("mimir-slow-consumer")
    traffic.select_option("recent:900")
    expect(duration).to_be_visible()
    expect(duration).to_have_accessible_name("Duration in seconds (blank: the window)")
    expect(queriers).to_have_accessible_name("Queriers (blank: as connected)")


def test_the_service_factor_boxes_are_read_in_their_group(page: Page) -> None:
    page.goto("/simulate/")
    group = page.get_by_role("group", name=re.compile(r"^Service time × per component"))
    expect(group).to_be_visible()
    boxes = group.get_by_role("spinbutton")
    expect(boxes).to_have_count(4)
    for component in ("ingester", "store-gateway", "ingester-and-store-gateway", "unknown"):
        box = group.get_by_role("spinbutton", name=component, exact=True)
        expect(box).to_have_id(f"factor-{component}")
    # The group's name is no label of a box outside it.
    expect(page.get_by_label("Arrivals ×")).not_to_have_accessible_name(re.compile("Service"))
