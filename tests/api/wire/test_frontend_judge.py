"""`judge_enqueue`: what a websocket enqueue is judged by."""

from __future__ import annotations

from api.wire.consumers.frontend import judge_enqueue
from api.wire.protocol import Enqueue
from scheduler_core.classify import client_headers
from scheduler_core.runtime import SchedulerRuntime

NOW = 1_700_000_000.0


def _enqueue(component: str | None) -> Enqueue:
    return Enqueue(
        id=1,
        tenant="acme",
        query="up",
        api_type="query",
        start=NOW,
        end=NOW,
        step=None,
        headers={"user-agent": "first", "User-Agent": "second", "X-PANEL-ID": "7"},
        component=component,
    )


def test_a_named_component_reads_the_client_headers_as_classification_does() -> None:
    runtime = SchedulerRuntime()
    _, _, bare, _ = judge_enqueue(runtime, _enqueue("ingester"), NOW)
    _, _, classified, _ = judge_enqueue(runtime, _enqueue(None), NOW)
    expected = client_headers(_enqueue(None).headers)
    assert expected == ("first", "", "7")
    for info in (bare, classified):
        assert (info.user_agent, info.dashboard_uid, info.panel_id) == expected
