"""Scheduler-settings validation: every error at its key, PATCHes onto a base, the raw form."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.errors import ConfigInvalid
from scheduler_core.model import QueueConfig
from scheduler_core.queue_settings import (
    queue_config_from_dict,
    queue_config_to_dict,
    validate_queue_settings,
)


@pytest.mark.parametrize(
    ("raw", "path", "fragment"),
    [
        ({"layout": "tree"}, "layout", "tenant-first, component-first"),
        # Named as JSON and YAML spell it, not as Python does ("None", "True").
        ({"layout": None}, "layout", "got null"),
        ({"component_selection": True}, "component_selection", "got true"),
        ({"component_selection": "random"}, "component_selection", "round-robin"),
        ({"max_outstanding_requests_per_tenant": 0}, "max_outstanding_requests_per_tenant", ">= 1"),
        ({"querier_forget_delay": "-1m"}, "querier_forget_delay", "not a valid duration"),
        ({"querier_forget_delay": -1}, "querier_forget_delay", ">= 0"),
        ({"priority_aging": "soon"}, "priority_aging", "not a valid duration"),
        ({"priority_aging_seconds": 5}, "priority_aging_seconds", "unknown field"),
        ({"query_ingesters_within": "0s"}, "query_ingesters_within", "> 0"),
        ({"query_store_after": 0}, "query_store_after", "> 0"),
        (
            {"query_store_after": "13h", "query_ingesters_within": "13h"},
            "query_store_after",
            "must be less than query_ingesters_within",
        ),
        ("layout", "(root)", "mapping"),
        ({"actor_path_header": None}, "actor_path_header", "must not be empty"),
        ({"actor_path_header": ""}, "actor_path_header", "must not be empty"),
        ({"actor_path_header": "X Actor"}, "actor_path_header", "HTTP header name"),
        # The message lists what a header name may hold (it said letters, digits, -).
        ({"actor_path_header": "X@Actor"}, "actor_path_header", "digits and ! # $ % & '"),
    ],
)
def test_each_bad_scheduler_setting_is_reported_at_its_key(
    raw: Any, path: str, fragment: str
) -> None:
    errors = validate_queue_settings(raw)
    assert [e.path for e in errors] == [path], errors
    assert fragment in errors[0].message


def test_a_partial_settings_dict_changes_only_the_given_keys() -> None:
    base = QueueConfig(max_outstanding_requests_per_tenant=7, querier_forget_delay=30.0)
    cfg = queue_config_from_dict({"layout": "component-first", "priority_aging": "1m"}, base)
    assert cfg == QueueConfig(
        layout="component-first",
        max_outstanding_requests_per_tenant=7,
        querier_forget_delay=30.0,
        priority_aging_seconds=60.0,
    )


def test_a_patch_is_checked_against_the_base_for_the_component_windows() -> None:
    base = QueueConfig()  # 13h ingesters, 12h store
    assert [e.path for e in validate_queue_settings({"query_store_after": "14h"}, base)] == [
        "query_store_after"
    ]
    with pytest.raises(ConfigInvalid):
        queue_config_from_dict({"query_store_after": "14h"}, base)
    assert queue_config_from_dict({"query_store_after": "1h"}, base).query_store_after == 3600.0


def test_scheduler_settings_round_trip_through_the_raw_form() -> None:
    cfg = QueueConfig(
        layout="component-first",
        component_selection="querier-worker-priority",
        max_outstanding_requests_per_tenant=250,
        querier_forget_delay=90.0,
        priority_aging_seconds=10.0,
        query_ingesters_within=2 * 86400.0,
        query_store_after=86400.0,
        max_queue_hierarchy_levels=2,
        actor_path_header="X-Actor",
        stuck_threshold_seconds=150.0,
        max_federated_tenants=8,
    )
    raw = queue_config_to_dict(cfg)
    assert raw == {
        "layout": "component-first",
        "component_selection": "querier-worker-priority",
        "max_outstanding_requests_per_tenant": 250,
        "querier_forget_delay": "1m30s",
        "priority_aging": "10s",
        "query_ingesters_within": "2d",
        "query_store_after": "1d",
        "max_queue_hierarchy_levels": 2,
        "actor_path_header": "X-Actor",
        "stuck_threshold": "2m30s",
        "max_federated_tenants": 8,
    }
    assert queue_config_from_dict(raw, QueueConfig()) == cfg


def test_the_stuck_threshold_is_a_positive_duration() -> None:
    errors = validate_queue_settings({"stuck_threshold": "0s"})
    assert [e.path for e in errors] == ["stuck_threshold"]
    assert validate_queue_settings({"stuck_threshold": "soon"})[0].path == "stuck_threshold"
    assert (
        queue_config_from_dict({"stuck_threshold": "5m"}, QueueConfig()).stuck_threshold_seconds
        == 300
    )


@pytest.mark.parametrize("value", [-1, 1.5, "3", True, None, 2**63])
def test_max_federated_tenants_is_a_non_negative_integer(value: object) -> None:
    assert [e.path for e in validate_queue_settings({"max_federated_tenants": value})] == [
        "max_federated_tenants"
    ]


@pytest.mark.parametrize(
    "header",
    [
        "Authorization",
        "authorization",
        "Proxy-Authorization",
        "Cookie",
        "Set-Cookie",
        "X-Api-Key",
        "X-Forwarded-Access-Token",
        "X-Auth-Request-Access-Token",
        "X-Session-Id",
        "X-Client-Secret",
        "Cf-Access-Jwt-Assertion",
        "X-Goog-Iap-Jwt-Assertion",
        "X-Amzn-Oidc-Data",
        "DPoP",
        "X-Authorization",
        "Authentication",
        "X-Auth",
        "Ocp-Apim-Subscription-Key",
        "X-Access-Key",
    ],
)
def test_a_header_that_carries_credentials_is_refused_as_the_actor_path_header(
    header: str,
) -> None:
    # Its values are shown to viewers, so an editor naming it would publish secrets.
    errors = validate_queue_settings({"actor_path_header": header})
    assert [e.path for e in errors] == ["actor_path_header"]
    assert "carries credentials" in errors[0].message and repr(header) in errors[0].message
    with pytest.raises(ConfigInvalid):
        queue_config_from_dict({"actor_path_header": header}, QueueConfig())


@pytest.mark.parametrize(
    "header",
    [
        "X-Auth-Request-User",
        "X-Auth-Request-Email",
        "X-Grafana-User",
        "X-Loki-Actor-Path",
        "X-Amzn-Oidc-Identity",
        "X-Goog-Authenticated-User-Email",
        "X-Authenticated-Userid",
        "X-Authorized-Team",
        "X-Keycloak-User",
        "X-Monkey-Team",
    ],
)
def test_a_header_naming_a_user_is_allowed_as_the_actor_path_header(header: str) -> None:
    assert validate_queue_settings({"actor_path_header": header}) == []


def test_the_tenant_header_is_allowed_as_the_actor_path_header_as_its_value_is_shown_anyway() -> (
    None
):
    cfg = queue_config_from_dict({"actor_path_header": "X-Scope-OrgID"}, QueueConfig())
    assert cfg.actor_path_header == "X-Scope-OrgID"
