"""The Simulate page in Chromium, against a real Daphne with real protocol clients.

From the tenant editor an operator changes a rule, presses "Simulate this
change", runs it on the traffic the scheduler just saw, and reads both
columns and the verdict; a long run can be cancelled.
"""

from __future__ import annotations

import re
import time

from playwright.sync_api import Page, Route, expect

from tests.e2e.conftest import Traffic, full_page_screenshot

REGEX = "query_priority.priorities[0].query_attributes[0].regex"


def test_a_rule_change_from_the_editor_is_simulated_on_recent_traffic(
    page: Page, traffic: Traffic
) -> None:
    querier = traffic.querier("q-sim", workers=4, latency=lambda _: 0.02)
    try:
        # Rounds of 40, each under the tenant's outstanding limit (100), each
        # waited for (bounded) until the querier answered it: the recorder saw them.
        for round_ in range(1, 7):
            traffic.enqueue("acme", query='special_query{job="x"}', count=20)
            traffic.enqueue("acme", query="up", count=20)
            deadline = time.monotonic() + 30
            while querier.served < 40 * round_ and time.monotonic() < deadline:
                time.sleep(0.05)
        assert querier.served == 240

        page.goto("/tenants/acme/")
        page.locator(f'[name="{REGEX}"]').fill("special")
        page.get_by_role("button", name="Simulate this change").click()
        expect(page).to_have_url(re.compile(r"/simulate/$"))
        expect(page.locator("#sim-origin")).to_contain_text("tenant acme")
        expect(page.locator("#sim-proposed")).to_have_value(re.compile(r'"regex": "special"'))
        expect(page.locator("#live-help")).to_contain_text("the tenants the proposal changes")
        page.get_by_label("Traffic").select_option("recent:300")
        page.get_by_role("button", name="Simulate", exact=True).click()

        verdicts = page.locator("#sim-verdicts li")
        expect(verdicts.first).to_be_visible(timeout=30_000)
        # The saved rule (^never$) gives every query priority 0; the proposed
        # one gives the special queries priority 5.
        expect(page.locator("#sim-verdicts")).to_contain_text(
            re.compile(r"p99 for priority 5: no requests live → [0-9.]+(µs|ms|s) proposed")
        )
        expect(page.locator("#sim-verdicts")).to_contain_text("p99 for priority 0: ")
        expect(page.locator("#sim-verdict-summary")).to_contain_text(
            "Only the proposed one has requests at priority 5."
        )
        changed = page.locator("#sim-verdicts li", has_text="priority 5")
        expect(changed).not_to_contain_text("(unchanged)")
        live = page.locator("#col-live")
        proposed = page.locator("#col-proposed")
        expect(live).to_contain_text("Queue wait by priority")
        expect(live).not_to_contain_text("priority 5")
        expect(proposed).to_contain_text("priority 5")
        expect(proposed).to_contain_text("acme")
        expect(page.locator("#chart-priority canvas")).to_have_count(1)
        expect(page.locator("#chart-queue canvas")).to_have_count(1)
        full_page_screenshot(page, "simulate.png")
        # Nothing was saved: the editor still shows the stored rule.
        page.goto("/tenants/acme/")
        expect(page.locator(f'[name="{REGEX}"]')).to_have_value("^never$")
    finally:
        traffic.close(querier)


def test_a_long_run_shows_progress_and_can_be_cancelled(page: Page) -> None:
    page.goto("/simulate/")
    page.get_by_label("Traffic").select_option("scenario:cortex-seed")
    page.get_by_label("Duration in seconds (blank: the scenario's 300)").fill("3600")
    page.get_by_label("Arrivals ×").fill("3")
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-progress")).to_be_visible()
    expect(page.locator("#sim-status")).to_contain_text("Simulating")
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator("#sim-status")).to_have_text("Cancelled.", timeout=10_000)
    expect(page.get_by_role("button", name="Simulate", exact=True)).to_be_enabled()
    # The worker is free again at once: a short run answers.
    page.get_by_label("Duration in seconds (blank: the scenario's 300)").fill("30")
    page.get_by_label("Arrivals ×").fill("1")
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-verdicts li").first).to_contain_text(
        "p99 for priority 2", timeout=30_000
    )
    # Nothing proposed: both sides are the live config, so every line reads the same.
    expect(page.locator("#sim-verdict-summary")).to_have_text(
        "The proposed config leaves every priority's p99 as it is on this workload."
    )
    expect(page.locator("#sim-verdicts li:not(.unchanged)")).to_have_count(0)
    expect(page.locator("#sim-verdicts li").first).to_contain_text("(unchanged)")
    expect(page.locator("#col-live")).to_contain_text(re.compile(r"\d(µs|ms|s)\b"))


def test_a_progress_answer_that_arrives_after_the_run_leaves_its_done_line(page: Page) -> None:
    held: list[Route] = []

    def hold(route: Route) -> None:
        if route.request.method == "GET":
            held.append(route)  # answered below, once the run's own answer is shown
        else:
            route.continue_()

    page.goto("/simulate/")
    page.route(re.compile(r"/api/v1/simulate/[^/]+/$"), hold)
    page.get_by_label("Traffic").select_option("scenario:cortex-seed")
    page.get_by_label("Duration in seconds (blank: the scenario's 300)").fill("1200")
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-status")).to_contain_text("Done in", timeout=30_000)
    assert held, "the run ended before its first progress poll"
    for route in held:
        route.fulfill(
            json={"progress": 0.5, "elapsed_seconds": 1.0, "time_limit_seconds": 60},
        )
    page.unroute(re.compile(r"/api/v1/simulate/[^/]+/$"))
    page.wait_for_timeout(200)  # the late answers' handlers run
    expect(page.locator("#sim-status")).to_contain_text("Done in")


def test_a_number_box_the_browser_cannot_read_is_refused_at_its_field_and_nothing_runs(
    page: Page,
) -> None:
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    page.goto("/simulate/")
    page.get_by_label("Traffic").select_option("scenario:cortex-seed")
    queriers = page.get_by_label("Queriers (blank: the scenario's 4)")
    factor = page.get_by_label("ingester", exact=True)
    # A lone "-" reads as "" to the page: blank Queriers would mean "as connected".
    queriers.press_sequentially("-")
    factor.fill("")
    factor.press_sequentially("1e")
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-status")).to_have_text("Nothing was simulated: fix the fields below.")
    expect(page.locator("#sim-errors li")).to_have_text(
        ["Queriers: not a number", "Service time × ingester: not a number"]
    )
    expect(queriers).to_have_attribute("aria-invalid", "true")
    expect(queriers).to_be_focused()
    assert not posts, posts
    # Put right, the run goes ahead and the marks go.
    queriers.fill("")
    factor.fill("1")
    page.get_by_label("Duration in seconds (blank: the scenario's 300)").fill("30")
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-status")).to_contain_text("Done in", timeout=30_000)
    expect(page.locator("#sim-errors")).to_be_hidden()
    expect(queriers).not_to_have_attribute("aria-invalid", "true")


def test_what_the_server_refuses_is_named_as_the_page_names_it(page: Page) -> None:
    """Not as the API spells it ("knobs.arrival_factor", "proposed.tenants...")."""
    page.goto("/simulate/")
    page.get_by_label("Traffic").select_option("scenario:cortex-seed")
    arrivals = page.get_by_label("Arrivals ×")
    arrivals.fill("1000")
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-status")).to_have_text("Nothing was simulated: fix the fields below.")
    errors = page.locator("#sim-errors li")
    expect(errors).to_have_text([re.compile(r"^Arrivals ×: must be > 0 and <= 100")])
    expect(arrivals).to_have_attribute("aria-invalid", "true")
    expect(arrivals).to_be_focused()
    arrivals.fill("1")
    page.locator("#sim-proposed").fill(
        '{"settings": {}, "tenants": {"tenant-1": {"max_queriers_per_tenant": -1}}}'
    )
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(errors).to_have_text([re.compile(r"^Changes, at tenants\.tenant-1\.max_queriers")])
    expect(arrivals).not_to_have_attribute("aria-invalid", "true")
    changes = page.locator("#sim-proposed")
    expect(changes).to_have_attribute("aria-invalid", "true")
    expect(changes).to_be_focused()
    expect(page.locator("#proposed-error")).to_contain_text("Changes, at tenants.tenant-1")
    changes.fill('{"settings": {}, "tenants": {}}')
    page.get_by_label("Duration in seconds (blank: the scenario's 300)").fill("30")
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-status")).to_contain_text("Done in", timeout=30_000)
    expect(changes).not_to_have_attribute("aria-invalid", "true")
    # Simulate, disabled while the run went, has the focus back.
    expect(page.get_by_role("button", name="Simulate", exact=True)).to_be_focused()
    page.get_by_label("Duration in seconds (blank: the scenario's 300)").fill("")


def test_a_huge_seed_is_refused_at_its_box_as_typed(page: Page) -> None:
    """Not as "1e+23", the Number the page once sent, refused as no integer."""
    page.goto("/simulate/")
    page.get_by_label("Traffic").select_option("scenario:cortex-seed")
    seed = page.get_by_label("Seed", exact=True)
    seed.fill("100000000000000000000000")
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-status")).to_have_text("Nothing was simulated: fix the fields below.")
    expect(page.locator("#sim-errors li")).to_have_text(
        ["Seed: must be >= 0 and <= 9223372036854775807, got 100000000000000000000000"]
    )
    expect(seed).to_have_attribute("aria-invalid", "true")
    expect(seed).to_be_focused()


def test_a_seed_past_2_53_is_run_and_echoed_as_typed(page: Page) -> None:
    page.goto("/simulate/")
    page.get_by_label("Traffic").select_option("scenario:cortex-seed")
    page.get_by_label("Seed", exact=True).fill("9007199254740993")
    page.get_by_label("Duration in seconds (blank: the scenario's 300)").fill("30")
    with page.expect_response(re.compile(r"/api/v1/simulate/$")) as answered:
        page.get_by_role("button", name="Simulate", exact=True).click()
    # The server ran that seed, not the Number 9007199254740992 next to it.
    assert '"seed":9007199254740993' in answered.value.text()
    expect(page.locator("#sim-status")).to_contain_text("Done in", timeout=30_000)
    expect(page.locator("#sim-workload-line")).to_contain_text("seed 9007199254740993.")


def test_a_proposal_that_causes_429s_says_so_in_the_verdict_summary(page: Page) -> None:
    page.goto("/simulate/")
    page.get_by_label("Traffic").select_option("scenario:cortex-seed")
    page.get_by_label("Duration in seconds (blank: the scenario's 300)").fill("60")
    # The scenario's tenant, its block replaced by one allowing only 2
    # requests outstanding: most of its arrivals are refused with a 429.
    page.locator("#sim-proposed").fill(
        '{"settings": {}, "tenants": {"tenant-1": {"max_outstanding_requests_per_tenant": 2}}}'
    )
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-status")).to_contain_text("Done in", timeout=30_000)
    summary = page.locator("#sim-verdict-summary")
    line = re.compile(r"Requests rejected \(429 and rules\): (\d+) live → (\d+) proposed\.")
    expect(summary).to_contain_text(line)
    live, proposed = map(int, line.findall(summary.inner_text())[0])
    assert proposed > live
    expect(page.locator("#col-proposed")).to_contain_text(
        f"{proposed} rejected over the outstanding limit"
    )
    expect(page.locator("#col-live")).to_contain_text(f"{live} rejected over the outstanding limit")


def test_a_run_too_large_for_its_arrivals_is_refused_at_the_arrivals_box(page: Page) -> None:
    """Not at the Duration box, left blank: the run was too large for Arrivals x 100."""
    page.goto("/simulate/")
    page.get_by_label("Traffic").select_option("scenario:cortex-seed")
    arrivals = page.get_by_label("Arrivals ×")
    arrivals.fill("100")
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(page.locator("#sim-status")).to_have_text("Nothing was simulated: fix the fields below.")
    expect(page.locator("#sim-errors li")).to_have_text(
        [re.compile(r"^Arrivals ×: this would simulate about 1,170,000 requests per config")]
    )
    expect(arrivals).to_have_attribute("aria-invalid", "true")
    expect(arrivals).to_be_focused()
    duration = page.get_by_label("Duration in seconds (blank: the scenario's 300)")
    expect(duration).not_to_have_attribute("aria-invalid", "true")
    arrivals.fill("1")
