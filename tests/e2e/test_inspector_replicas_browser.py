"""The merged inspector in Chromium with two real replicas (PostgreSQL + Redis).

Replica A serves the page; a frontend connects to each replica. The
frontends panel lists both, each labelled with its replica, and goes back to
the single-replica table (no replica column) once replica B stops and its
summary is withdrawn. The drill-down on A lists B's requests too, expands
and cancels them there. Without TEST_DATABASE_URL and TEST_REDIS_URL the
module fails, saying so (`tests.service.replica_pair`).
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import EDITOR, QUICK_HASH, Traffic
from tests.e2e.drill_pages import away_from_the_list
from tests.service.replica_pair import replica_pair

PEERS_WITHIN = 5_000  # ms: two publish periods plus a tick, with room for a busy machine


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[DaphneProcess, DaphneProcess]]:
    with replica_pair(SHUTDOWN_DRAIN_TIMEOUT="1", **QUICK_HASH) as (a, b):
        a.create_user(*EDITOR, group="editor")
        yield a, b


@pytest.fixture(scope="module")
def server(pair: tuple[DaphneProcess, DaphneProcess]) -> DaphneProcess:
    """Replica A: the conftest's `page` opens the inspector there."""
    return pair[0]


@pytest.fixture(scope="module")
def traffic_a(pair: tuple[DaphneProcess, DaphneProcess]) -> Iterator[Traffic]:
    helper = Traffic(pair[0])
    try:
        yield helper
    finally:
        helper.stop()


@pytest.fixture(scope="module")
def traffic_b(pair: tuple[DaphneProcess, DaphneProcess]) -> Iterator[Traffic]:
    helper = Traffic(pair[1])
    try:
        yield helper
    finally:
        helper.stop()


@pytest.fixture(scope="module")
def queued_on_b(traffic_b: Traffic) -> None:
    """Two requests of merged-tenant from B's frontend; no querier: they stay outstanding."""
    traffic_b.enqueue("merged-tenant", count=2)


def frontend_row(page: Page, traffic: Traffic, replica_id: str | None) -> tuple[object, str]:
    """The panel row of `traffic`'s own frontend and its address."""
    host, port = traffic.frontend.ws.local_address[:2]
    address = f"{host}:{port}"
    key = f"websocket {address}" + (f" {replica_id}" if replica_id else "")
    return page.locator(f'#frontends tr[data-frontend="{key}"]'), address


def test_the_inspector_on_replica_a_counts_both_replicas(page: Page) -> None:
    page.goto("/")
    expect(page.locator("#live-state")).to_have_text("live")
    expect(page.locator("#replicas-note")).to_contain_text("2 replicas", timeout=PEERS_WITHIN)
    # The header's loop load is the busiest replica's, and says which one that is.
    expect(page.locator("#f-load")).to_have_attribute(
        "title", re.compile(r"; the busiest replica: replica-[ab]$"), timeout=PEERS_WITHIN
    )
    expect(page.locator("#f-load")).to_have_text(re.compile(r"^\d{1,3}%$"))


@pytest.mark.usefixtures("queued_on_b")
def test_the_frontends_panel_lists_a_frontend_of_each_replica_with_its_replica(
    page: Page, traffic_a: Traffic, traffic_b: Traffic, tmp_path: Path
) -> None:
    page.goto("/")
    row_a, address_a = frontend_row(page, traffic_a, "replica-a")
    row_b, address_b = frontend_row(page, traffic_b, "replica-b")
    expect(row_b).to_have_attribute(
        "aria-label",
        f"websocket frontend {address_b} on replica replica-b: 2 outstanding",
        timeout=PEERS_WITHIN,
    )
    expect(row_a).to_have_attribute(
        "aria-label", f"websocket frontend {address_a} on replica replica-a: 0 outstanding"
    )
    # A wait, as format.js spells it: "2.3s" below a minute, "1m5s" from one up.
    seconds = re.compile(r"^((\d+(y|w|d|h|m|s))+|\d+(\.\d+)?(s|ms|µs))$")
    expect(row_b.locator("td")).to_have_text(
        ["websocket", address_b, "test-frontend", "1", "2", seconds, "replica-b"]
    )
    expect(row_a.locator("td").last).to_have_text("replica-a")
    expect(page.locator("#frontends-replica")).to_be_visible()
    expect(page.locator("#frontends-replica")).to_have_text("Replica")
    # Most outstanding first: B's frontend holds the two queued requests.
    expect(page.locator("#frontends tr").first).to_have_attribute(
        "data-frontend", f"websocket {address_b} replica-b"
    )
    expect(page.locator("#frontends-count")).to_have_text("2 total · 2 outstanding")
    expect(page.locator("#frontends-missing")).to_be_hidden()
    page.locator(".frontends-card").screenshot(path=str(tmp_path / "frontends-two-replicas.png"))


def test_a_named_frontend_on_both_replicas_is_a_row_on_each_and_one_frontend_in_the_header(
    page: Page, traffic_a: Traffic, traffic_b: Traffic, pair: tuple[DaphneProcess, DaphneProcess]
) -> None:
    page.goto("/")
    header = page.locator("#f-frontends")
    expect(header).to_have_text("2")  # each replica's own frontend
    on_a = traffic_a.another_frontend(pair[0].issue_token("frontend", "edge"), name="edge-1")
    on_b = traffic_b.another_frontend(pair[1].issue_token("frontend", "edge"), name="edge-1")
    rows = page.locator('#frontends tr[data-frontend^="websocket edge-1 "]')
    try:
        expect(rows).to_have_count(2, timeout=PEERS_WITHIN)
        expect(rows.first.locator("td").nth(1)).to_have_text("edge-1")
        expect(header).to_have_text("3", timeout=PEERS_WITHIN)  # counted per socket: 4
    finally:
        traffic_a.close(on_a)
        traffic_b.close(on_b)
    expect(rows).to_have_count(0, timeout=PEERS_WITHIN)
    expect(header).to_have_text("2", timeout=PEERS_WITHIN)


@pytest.mark.usefixtures("queued_on_b")
def test_the_drill_down_lists_every_replica_s_requests_and_cancels_on_the_one_holding_it(
    page: Page, traffic_a: Traffic, traffic_b: Traffic
) -> None:
    page.goto("/")
    traffic_a.enqueue("merged-tenant", "sum(rate(on_a[5m]))")
    page.get_by_role("button", name="Requests of merged-tenant").click()
    rows = page.locator("#drill-rows > li")
    # A's own row at once, B's two once B has answered (asked in the background).
    expect(rows).to_have_count(3, timeout=PEERS_WITHIN)
    expect(page.locator("#drill-count")).to_have_text("3 of 3")
    expect(rows.nth(0).locator(".meta")).to_contain_text("replica replica-a")
    for i in (1, 2):
        expect(rows.nth(i).locator(".meta")).to_contain_text("replica replica-b")
    expect(page.locator("#drill-note")).not_to_contain_text("Not answering")
    # B's request, expanded from A: its text comes from B.
    rows.nth(1).locator(".expand").click()
    expect(rows.nth(1).locator(".full pre")).to_have_text("up")
    # Cancelled from A, answered on B's frontend, gone from A's list.
    rid = rows.nth(2).get_attribute("data-id")
    rows.nth(2).get_by_role("button", name="Cancel…").click()
    page.locator("#cancel-note").fill("from a")
    page.get_by_role("button", name="Cancel the request").click()
    expect(page.locator("#drill-message")).to_contain_text("Cancelled")
    away_from_the_list(page)  # the list holds its rows while it has the focus
    expect(rows).to_have_count(2, timeout=PEERS_WITHIN)
    expect(page.locator("#drill-count")).to_have_text("2 of 2")
    told = {"type": "failed", "error": "cancelled by operator erin: from a"}
    for _ in range(50):  # the reply reaches B's frontend over its own socket
        if any(told.items() <= r.items() for r in traffic_b.replies):
            break
        page.wait_for_timeout(100)
    assert any(told.items() <= r.items() for r in traffic_b.replies), (rid, traffic_b.replies)
    # A's own request is cancelled here, so A's frontend ends with nothing outstanding.
    rows.nth(0).get_by_role("button", name="Cancel…").click()
    page.get_by_role("button", name="Cancel the request").click()
    expect(page.locator("#drill-message")).to_contain_text("Cancelled")
    away_from_the_list(page)
    expect(rows).to_have_count(1, timeout=PEERS_WITHIN)
    page.locator("#drill-close").click()


def test_a_hung_replica_is_named_as_not_answering_until_it_resumes(
    page: Page, pair: tuple[DaphneProcess, DaphneProcess]
) -> None:
    """It was left out of the header's count without a word, as if it never was."""
    page.goto("/")
    note = page.locator("#replicas-note")
    expect(note).to_contain_text("2 replicas", timeout=PEERS_WITHIN)
    assert pair[1].proc is not None
    os.kill(pair[1].proc.pid, signal.SIGSTOP)
    try:
        expect(note).to_have_text("not answering: replica-b", timeout=2 * PEERS_WITHIN)
    finally:
        os.kill(pair[1].proc.pid, signal.SIGCONT)
    expect(note).to_contain_text("2 replicas", timeout=PEERS_WITHIN)
    expect(note).not_to_contain_text("not answering")


def test_when_replica_b_stops_the_panel_is_the_single_replica_one_again(
    page: Page, traffic_a: Traffic, pair: tuple[DaphneProcess, DaphneProcess]
) -> None:
    page.goto("/")
    pair[1].stop()
    row, address = frontend_row(page, traffic_a, None)
    expect(row).to_have_attribute(
        "aria-label", f"websocket frontend {address}: 0 outstanding", timeout=PEERS_WITHIN
    )
    expect(row.locator("td")).to_have_count(6)
    expect(page.locator("#frontends-replica")).to_be_hidden()
    expect(page.locator("#frontends tr")).to_have_count(1)
    expect(page.locator("#frontends-count")).to_have_text("1 total · 0 outstanding")
    expect(page.locator("#replicas-note")).to_be_hidden()
    # One replica left: its own loop, with no replica to name.
    expect(page.locator("#f-load")).not_to_have_attribute("title", re.compile(r"replica"))
    expect(page.locator("#f-load")).to_have_text(re.compile(r"^\d{1,3}%$"))
