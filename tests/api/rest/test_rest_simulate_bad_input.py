"""`simulate/` with bad input: every error in one answer, each at its path, nothing run or written.

A bad proposed tenant ID used to hide the errors of its block, of the
settings and of the rest of the body until it was fixed; and for `recent`
in a process without a scheduler, a 409 hid every error of the proposal.
"""

from __future__ import annotations

from typing import Any

import pytest

from api.store.models import ConfigRevision, Tenant
from tests.examples import SEED_TENANT_CONFIG

URL = "/api/v1/simulate/"
RECENT = {"kind": "recent"}
SEED = {"workload": {"kind": "scenario", "name": "cortex-seed"}, "knobs": {"duration_seconds": 30}}


@pytest.fixture(autouse=True)
def _in_process(settings: Any) -> None:
    settings.SIMULATION_IN_WORKER_PROCESS = False


def _post(client: Any, body: object, expected: int) -> Any:
    response = client.post(URL, body, format="json")
    assert response.status_code == expected, response.content
    return response.json()


def test_a_bad_tenant_id_is_answered_with_every_other_error_of_the_request(editor_api):
    editor_api.put("/api/v1/tenants/t1/", SEED_TENANT_CONFIG, format="json")
    revisions, tenants = ConfigRevision.objects.count(), list(Tenant.objects.values())
    body = _post(
        editor_api,
        {
            "workload": {"kind": "scenario", "name": "cortex-seed"},
            "proposed": {
                "settings": {"layout": "sideways"},
                "tenants": {
                    "team a": {"max_queriers_per_tenant": -1},
                    "team|b": "x",
                    "tenant-1": {"max_query_capacity": 2},
                },
            },
            "knobs": {"queriers": 0},
            "run_id": "refused-1",
        },
        400,
    )
    tenants_errors = body["proposed"]["tenants"]
    # The ID's own error sits beside its block's, as DRF nests an object's errors.
    assert tenants_errors["team a"]["non_field_errors"][0].startswith("invalid characters ' '")
    assert tenants_errors["team a"]["max_queriers_per_tenant"] == ["must be >= 0, got -1"]
    assert tenants_errors["team|b"] == [
        "invalid characters '|'; allowed: letters, digits and ! - _ . * ' ( )",
        "must be a tenant block (a mapping) or null, got 'x'",
    ]
    assert tenants_errors["tenant-1"]["max_query_capacity"]
    assert body["proposed"]["settings"]["layout"][0].startswith("must be one of")
    assert body["knobs"]["queriers"] == ["must be >= 1 and <= 1000, got 0"]
    # No run was started: its starter finds none under that id.
    assert editor_api.get(f"{URL}refused-1/").status_code == 404
    assert ConfigRevision.objects.count() == revisions
    assert list(Tenant.objects.values()) == tenants


def test_the_proposal_of_a_recent_run_is_judged_before_traffic_is_looked_for(viewer_api):
    body = _post(
        viewer_api,
        {
            "workload": {"kind": "recent", "window_seconds": 300},
            "proposed": {"settings": {"query_store_after": "0s"}, "tenants": {"": {}}},
        },
        400,
    )
    assert body["proposed"]["settings"]["query_store_after"]
    assert body["proposed"]["tenants"][""] == ["must be a non-empty string"]


def test_settings_are_judged_even_when_the_workload_names_no_base(viewer_api):
    body = _post(
        viewer_api,
        {"workload": {"kind": "scenario", "name": "nope"}, "proposed": {"settings": {"layout": 1}}},
        400,
    )
    assert body["workload"]["name"] and body["proposed"]["settings"]["layout"]


def test_a_null_tenant_block_runs_that_tenant_with_the_defaults_as_if_deleted(viewer_api):
    removed = _post(viewer_api, {**SEED, "proposed": {"tenants": {"tenant-1": None}}}, 200)
    empty = _post(viewer_api, {**SEED, "proposed": {"tenants": {"tenant-1": {}}}}, 200)
    assert set(removed["proposed"]["by_priority"]) == {"0"}
    assert removed["proposed"]["reserved_queriers"] == []
    assert removed["live"] != removed["proposed"]
    assert removed["proposed"] == empty["proposed"]
    # What was simulated says what was asked: the override removed.
    assert removed["workload"]["proposed"]["tenants"] == {"tenant-1": None}


@pytest.mark.parametrize("block", [None, {}, SEED_TENANT_CONFIG])
def test_a_tenant_the_scenario_does_not_have_is_refused_at_its_id(viewer_api, block):
    body = _post(viewer_api, {**SEED, "proposed": {"tenants": {"tenant-2": block}}}, 400)
    (message,) = body["proposed"]["tenants"]["tenant-2"]
    assert message.startswith("no tenant 'tenant-2' is in this scenario")
    assert message.endswith("tenants here: tenant-1")


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ([], ["non_field_errors"]),
        ("x", ["non_field_errors"]),
        (7, ["non_field_errors"]),
        ({}, ["workload"]),
        ({"workload": "recent"}, ["workload"]),
        ({"workload": {"kind": ["recent"]}}, ["workload", "kind"]),
        ({"workload": {**RECENT, "window_seconds": "900"}}, ["workload", "window_seconds"]),
        (
            {"workload": {"kind": "recent", "window_seconds": 10**30}},
            ["workload", "window_seconds"],
        ),
        ({**SEED, "proposed": "x"}, ["proposed"]),
        ({**SEED, "proposed": {"settings": []}}, ["proposed", "settings"]),
        ({**SEED, "proposed": {"tenants": [{}]}}, ["proposed", "tenants"]),
        ({**SEED, "proposed": {"tenants": {"tenant-1": 5}}}, ["proposed", "tenants", "tenant-1"]),
        ({**SEED, "proposed": {"tenant": {}}}, ["proposed", "tenant"]),
        ({**SEED, "knobs": "fast"}, ["knobs"]),
        ({**SEED, "knobs": {"service_factor": [2]}}, ["knobs", "service_factor"]),
        ({**SEED, "knobs": {"duration_seconds": -30}}, ["knobs", "duration_seconds"]),
        ({**SEED, "knobs": {"arrival_factor": 1e300}}, ["knobs", "arrival_factor"]),
        ({**SEED, "knobs": {"speed": 2}}, ["knobs", "speed"]),
        ({**SEED, "seed": "1"}, ["seed"]),
        ({**SEED, "run_id": 5}, ["run_id"]),
        ({**SEED, "extra": True}, ["extra"]),
    ],
)
def test_a_value_of_the_wrong_type_or_size_is_a_400_at_its_path(viewer_api, body, path):
    errors = _post(viewer_api, body, 400)
    for part in path:
        errors = errors[part]
    assert errors and all(isinstance(message, str) for message in errors)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('"arrival_factor": NaN', "arrival_factor"),
        ('"duration_seconds": Infinity', "duration_seconds"),
        ('"duration_seconds": -Infinity', "duration_seconds"),
        ('"duration_seconds": ' + "9" * 400, "duration_seconds"),
    ],
)
def test_nan_infinity_and_huge_numbers_are_refused_at_their_knob(viewer_api, text, path):
    raw = '{"workload": {"kind": "scenario", "name": "cortex-seed"}, "knobs": {' + text + "}}"
    response = viewer_api.generic("POST", URL, raw, content_type="application/json")
    assert response.status_code == 400, response.content
    (message,) = response.json()["knobs"][path]
    assert len(message) < 100  # a 400-digit number is named by its size


def test_a_post_without_a_body_asks_for_the_workload(viewer_api):
    response = viewer_api.post(URL)
    assert response.status_code == 400
    assert response.json()["workload"][0].startswith("required")
