"""Actor sub-queues in the inspector's tree, in Chromium, from both protocols.

A websocket frontend sends `X-Loki-Actor-Path` in its enqueue's headers and a
Cortex gRPC frontend as a forwarded HTTP header; the tree shows the actor
levels under the tenant's component, in both projections, live, and the
drill-down lists an actor's requests, shows each row's actor and filters by
any actor path typed in.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from api.wire.grpc.clients import CortexFrontend, get_request
from loadgen.daphne_process import DaphneProcess, user_code
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.e2e.conftest import EDITOR, SCREENSHOTS, Traffic, module_server
from tests.e2e.drill_pages import open_row, treeitem


@pytest.fixture(scope="module")
def server() -> Iterator[DaphneProcess]:
    """This module's server serves gRPC too (the shared one does not)."""
    yield from module_server(grpc=True, code=user_code(*EDITOR, group="editor"))


def test_actor_levels_from_both_protocols_show_under_the_tenant(
    page: Page, server: DaphneProcess, traffic: Traffic
) -> None:
    page.goto("/")
    expect(page.locator("#live-state")).to_have_text("live")

    traffic.enqueue("loki", count=2, headers={"X-Loki-Actor-Path": "users|joe"})
    traffic.enqueue("loki", headers={"X-Loki-Actor-Path": "users|ann"})
    traffic.enqueue("loki")  # no actor: the tenant's own queue

    async def grpc_enqueue() -> CortexFrontend:
        fe = await CortexFrontend(f"127.0.0.1:{server.grpc_port}").start()
        loop = await fe.open_loop()
        now = time.time()
        params = [("query", "up"), ("start", str(now - 600)), ("end", str(now)), ("step", "30")]
        request = get_request("/prometheus/api/v1/query_range", params,
                              {"X-Loki-Actor-Path": "apps|grafana"})  # fmt: skip
        assert await loop.enqueue(1, "loki", request) == pb.OK
        return fe

    frontend = traffic.run(grpc_enqueue())
    try:
        open_row(page, "loki: 5 queued")
        open_row(page, "ingester: 5 queued")
        expect(treeitem(page, "(no actor): 1 queued")).to_be_visible()
        open_row(page, "actor users: 3 queued")
        expect(treeitem(page, "actor joe: 2 queued")).to_be_visible()
        expect(treeitem(page, "actor ann: 1 queued")).to_be_visible()
        open_row(page, "actor apps: 1 queued")
        expect(treeitem(page, "actor grafana: 1 queued")).to_be_visible()
        page.screenshot(path=str(SCREENSHOTS / "inspector-actors.png"))

        page.get_by_text("component → tenant").click()
        open_row(page, "ingester: 5 queued")
        open_row(page, "loki: 5 queued")
        open_row(page, "actor users: 3 queued")
        expect(treeitem(page, "actor joe: 2 queued")).to_be_visible()
        traffic.enqueue("loki", headers={"X-Loki-Actor-Path": "users|joe"})
        # A server round trip and a live frame: the suite's ten seconds, not two
        # (a busy machine); the page is never reloaded, so only a live update passes.
        expect(treeitem(page, "actor joe: 3 queued")).to_be_visible()

        # The drill-down from an actor node: that actor's requests, and its path.
        page.get_by_role("button", name="Requests of joe").click()
        expect(page.locator("#drill-title")).to_have_text(
            "Requests of tenant loki / ingester / actor users|joe"
        )
        expect(page.locator("#drill-actor")).to_have_value("users|joe")
        rows = page.locator("#drill-rows > li")
        expect(rows).to_have_count(3)
        for i in range(3):
            expect(rows.nth(i).locator(".meta")).to_contain_text("actor users|joe")
        page.locator("#drill").screenshot(path=str(SCREENSHOTS / "inspector-actor-drilldown.png"))
        # A typed path widens or moves the filter: a level and everything below it.
        page.locator("#drill-actor").fill("users")
        expect(rows).to_have_count(4)
        expect(page.locator("#drill-count")).to_have_text("4 of 4")
        page.locator("#drill-actor").fill("apps|grafana")
        expect(rows).to_have_count(1)
        expect(rows.first.locator(".meta")).to_contain_text("gRPC")
        page.locator("#drill-actor").fill("")
        expect(rows).to_have_count(6)
        expect(page.locator("#drill-title")).to_have_text("Requests of tenant loki / ingester")
    finally:
        traffic.run(frontend.close())
