"""`simulate/`: viewers may run it, every field is checked by path, and it writes nothing."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from api.rest.views import simulate as simulate_view
from api.store.models import ConfigRevision, Tenant
from api.wire.traffic_recording import LiveCapture
from scheduler_core.model import Request
from scheduler_core.traffic_record import TrafficRecorder
from tests.examples import SEED_TENANT_CONFIG

URL = "/api/v1/simulate/"
SEED = {"workload": {"kind": "scenario", "name": "cortex-seed"}, "knobs": {"duration_seconds": 60}}


@pytest.fixture(autouse=True)
def _in_process(settings: Any) -> None:
    settings.SIMULATION_IN_WORKER_PROCESS = False


def _post(client: Any, body: dict[str, Any], expected: int = 200) -> dict[str, Any]:
    response = client.post(URL, body, format="json")
    assert response.status_code == expected, response.content
    return dict(response.json())


def test_a_viewer_runs_the_cortex_seed_scenario_and_gets_both_columns_and_verdicts(viewer_api):
    body = _post(viewer_api, SEED)
    for side in ("live", "proposed"):
        result = body[side]
        assert set(result["by_priority"]) == {"2", "1", "0"}
        assert set(result["by_component"]) == {
            "ingester",
            "store-gateway",
            "ingester-and-store-gateway",
        }
        for stats in result["by_priority"].values():
            assert set(stats) == {"mean", "p50", "p99", "max", "count"}
        assert result["worst_tenants"][0]["tenant"] == "tenant-1"
        assert result["reserved_queriers"] == ["querier-1"]
    assert body["workload"]["name"] == "cortex-seed" and body["workload"]["seed"] == 1
    assert body["verdicts"][0].startswith("p99 for priority 2: ")
    assert body["live"] == body["proposed"]  # nothing proposed: the same run twice
    assert body["live"]["waiting_at_window_end"] is None  # a scenario is drained to its end


def test_simulating_writes_nothing(editor_api):
    editor_api.put("/api/v1/tenants/t1/", SEED_TENANT_CONFIG, format="json")
    revisions, tenants = ConfigRevision.objects.count(), list(Tenant.objects.values())
    proposal = copy.deepcopy(SEED_TENANT_CONFIG)
    proposal["query_priority"]["enabled"] = False
    _post(
        editor_api,
        {
            **SEED,
            "proposed": {
                "settings": {"layout": "component-first"},
                # The scenario's own tenant (t1 is in the store, not in it: a 400).
                "tenants": {"tenant-1": proposal},
            },
        },
    )
    assert ConfigRevision.objects.count() == revisions
    assert list(Tenant.objects.values()) == tenants
    assert editor_api.get("/api/v1/settings/").json()["layout"] == "tenant-first"


def test_a_proposed_tenant_block_overrides_the_scenarios_own_one(viewer_api):
    off = copy.deepcopy(SEED_TENANT_CONFIG)
    off["query_priority"]["enabled"] = False
    body = _post(viewer_api, {**SEED, "proposed": {"tenants": {"tenant-1": off}}})
    assert set(body["proposed"]["by_priority"]) == {"0"}
    assert body["proposed"]["reserved_queriers"] == []
    assert "p99 for priority 2: " in body["verdicts"][0]
    assert body["verdicts"][0].endswith("-> no requests")


def test_every_bad_field_is_named_by_its_path(viewer_api):
    body = _post(
        viewer_api,
        {
            "workload": {"kind": "scenario", "name": "nope"},
            "knobs": {
                "arrival_factor": -1,
                "service_factor": {"store-gateway": 0, "disk": 2},
                "queriers": 0,
                "slow_share": 0.5,
                "speed": 3,
            },
            "seed": "x",
            "extra": True,
        },
        expected=400,
    )
    assert "must be one of" in body["workload"]["name"][0]
    knobs = body["knobs"]
    assert set(knobs) == {"arrival_factor", "service_factor", "queriers", "slow_share", "speed"}
    assert set(knobs["service_factor"]) == {"store-gateway", "disk"}
    assert body["seed"] and body["extra"] == ["unknown field"]


def test_a_proposed_rule_is_refused_for_the_reasons_saving_it_would_be(viewer_api):
    bad = {"query_priority": {"enabled": True, "priorities": [{"query_attributes": [{}]}]}}
    body = _post(
        viewer_api,
        {
            **SEED,
            "proposed": {"settings": {"layout": "sideways"}, "tenants": {"team.a": bad}},
        },
        expected=400,
    )
    assert "must be one of" in body["proposed"]["settings"]["layout"][0]
    rule = body["proposed"]["tenants"]["team.a"]["query_priority"]["priorities"]["0"]
    assert rule["priority"] == ["required"]
    assert rule["query_attributes"]["0"]


def test_slow_share_is_only_for_the_mimir_scenario_and_too_large_runs_are_refused(viewer_api):
    body = _post(viewer_api, {**SEED, "knobs": {"slow_share": 0.3}}, expected=400)
    assert "mimir-slow-consumer" in body["knobs"]["slow_share"][0]
    huge = {**SEED, "knobs": {"arrival_factor": 100, "duration_seconds": 3600}}
    body = _post(viewer_api, huge, expected=400)
    assert "at most" in body["knobs"]["duration_seconds"][0]


def test_recent_traffic_needs_a_scheduler_running_in_this_process(viewer_api):
    body = _post(viewer_api, {"workload": {"kind": "recent", "window_seconds": 300}}, expected=409)
    assert body["code"] == "no_traffic"


def test_anonymous_callers_are_refused(anon_api):
    assert anon_api.post(URL, SEED, format="json").status_code in (401, 403)


def _recorded(clock: list[float]) -> TrafficRecorder:
    """Five minutes of two tenants' traffic, one of them a multi-tenant id."""
    recorder = TrafficRecorder(clock=lambda: clock[0], wall_clock=lambda: 1.7e9 + clock[0])
    rng = random.Random(3)
    for i in range(3000):
        clock[0] += rng.expovariate(10.0)
        tenant = "t1" if i % 3 else "t1|t2"
        wall = 1.7e9 + clock[0]
        request = Request(
            id=f"r{i}",
            tenant_id=tenant,
            component="ingester",
            query="max(up)" if i % 2 else "sum(rate(x[5m]))",
            api_type="query_range",
            start=wall - 3600,
            end=wall,
            step=30,
        )
        recorder.on_enqueued(request)
        recorder.on_dispatched(request, "q-1", 0, 0.0)
        clock[0] += 0.2
        recorder.on_completed(request)
        clock[0] -= 0.2
    return recorder


def test_recent_traffic_is_replayed_under_the_live_and_the_proposed_rules(editor_api, monkeypatch):
    editor_api.put("/api/v1/tenants/t1/", SEED_TENANT_CONFIG, format="json")
    clock = [1000.0]
    recorder = _recorded(clock)
    windows = {"query_ingesters_within": 13 * 3600.0, "query_store_after": 12 * 3600.0}
    fleet = (("q-1", 4), ("q-2", 4))

    async def capture(window: int) -> LiveCapture:
        return LiveCapture(recorder.capture(window), fleet, windows)

    monkeypatch.setattr(simulate_view, "capture_on_loop", capture)
    off = copy.deepcopy(SEED_TENANT_CONFIG)
    off["query_priority"]["enabled"] = False
    body = _post(
        editor_api,
        {
            "workload": {"kind": "recent", "window_seconds": 300},
            "proposed": {"tenants": {"t1": off}},
        },
    )
    live, proposed = body["live"], body["proposed"]
    # The seed's rules give max(up) over the last hour priority 2, the rest 1
    # (within 24h); the a|b id takes t1's rules, as the gRPC door derives them.
    assert set(live["by_priority"]) == {"2", "1"}
    assert set(proposed["by_priority"]) == {"0"}
    assert {row["tenant"] for row in live["worst_tenants"]} == {"t1", "t1|t2"}
    assert body["workload"]["kind"] == "recent" and body["workload"]["workers"] == 8
    assert body["workload"]["measured"]["by_component"]["ingester"]["count"] > 0
    assert live["requests"]["offered"] == proposed["requests"]["offered"] > 2000
    for side in (live, proposed):
        end = side["waiting_at_window_end"]
        assert end["total"] == sum(end["by_priority"].values())


def test_removing_the_override_of_a_tenant_the_window_never_saw_is_refused_at_its_id(
    viewer_api, monkeypatch
):
    recorder = _recorded([1000.0])

    async def capture(window: int) -> LiveCapture:
        return LiveCapture(recorder.capture(window), (("q-1", 4),), {})

    monkeypatch.setattr(simulate_view, "capture_on_loop", capture)
    recent = {
        "workload": {"kind": "recent", "window_seconds": 300},
        "knobs": {"arrival_factor": 0.1},
    }
    body = _post(viewer_api, {**recent, "proposed": {"tenants": {"t3": None}}}, expected=400)
    (message,) = body["proposed"]["tenants"]["t3"]
    assert message.startswith("no tenant 't3' is configured or sent traffic in this window")
    # t2 sent traffic only as part of t1|t2: removing its (absent) override is no mistake.
    _post(viewer_api, {**recent, "proposed": {"tenants": {"t2": None}}})


def test_the_recording_is_refused_where_no_scheduler_runs_and_checks_its_window(viewer_api):
    assert viewer_api.get("/api/v1/recording/?window_seconds=10").status_code == 400
    response = viewer_api.get("/api/v1/recording/?window_seconds=300")
    assert response.status_code == 409 and response.json()["code"] == "no_traffic"


def test_every_worker_busy_is_a_503_logged_as_a_warning_not_an_error(
    viewer_api: Any, monkeypatch: Any, caplog: Any
) -> None:
    def busy(*_: Any) -> Any:
        raise simulate_view.SimulationBusy("every simulation worker is busy")

    monkeypatch.setattr(simulate_view, "submit", busy)
    body = _post(viewer_api, SEED, expected=503)
    assert body["code"] == "busy"
    assert [r.levelname for r in caplog.records if "busy" in r.getMessage()] == ["WARNING"]
    assert [r.getMessage() for r in caplog.records if r.levelno >= 40] == []
