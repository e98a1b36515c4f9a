"""A number written as -0.0 is stored and exported as 0.0 by every write path.

Validation reads -0.0 as 0, but blocks were stored as written, so the
export (`runtime-config/`) and the YAML view (`tenants/{id}/yaml/`)
showed "-0.0" for a limit of 0.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from api.store.models import ConfigRevision, Tenant

URL = "/api/v1/runtime-config/"
TENANT = "/api/v1/tenants/t/"


def _block(capacity: float, reserved: float) -> dict[str, Any]:
    return {
        "max_query_capacity": capacity,
        "query_priority": {
            "enabled": True,
            "priorities": [
                {"priority": 1, "reserved_queriers": reserved, "query_attributes": [{"regex": "a"}]}
            ],
        },
    }


def _zeros(config: dict[str, Any]) -> list[float]:
    """The two numbers `_block` sets, as stored."""
    priority = config["query_priority"]["priorities"][0]
    return [config["max_query_capacity"], priority["reserved_queriers"]]


def _assert_stored_and_shown_as_zero(client: Any) -> None:
    stored = _zeros(Tenant.objects.get(tenant_id="t").config)
    # A float as the other values of those fields are, and positive.
    assert all(type(z) is float and z == 0 and math.copysign(1, z) == 1 for z in stored)
    assert b"-0" not in client.get(URL).content
    assert "-0" not in client.get(f"{TENANT}yaml/").json()["yaml"]
    assert b"-0" not in client.get(TENANT).content


def _legacy_tenant() -> None:
    """A tenant an earlier release stored with -0.0, as it was sent."""
    Tenant.objects.create(tenant_id="t", config=_block(-0.0, -0.0), version=1)


def test_a_tenant_put_of_negative_zero_stores_and_exports_zero(editor_api: Any) -> None:
    response = editor_api.put(TENANT, _block(-0.0, -0.0), format="json")
    assert response.status_code == 201, response.content
    assert b"-0" not in response.content
    _assert_stored_and_shown_as_zero(editor_api)


def test_a_tenant_patch_of_negative_zero_stores_zero(editor_api: Any) -> None:
    editor_api.put(TENANT, _block(0.5, 1), format="json")
    patch = {
        "max_query_capacity": -0.0,
        "query_priority": {"priorities": _block(0, -0.0)["query_priority"]["priorities"]},
    }
    response = editor_api.patch(TENANT, patch, format="json", HTTP_IF_MATCH="*")
    assert response.status_code == 200, response.content
    _assert_stored_and_shown_as_zero(editor_api)


def test_a_tenant_stored_with_negative_zero_still_validates_and_its_next_write_stores_zero(
    editor_api: Any,
) -> None:
    _legacy_tenant()
    response = editor_api.patch(
        TENANT, {"max_queriers_per_tenant": 2}, format="json", HTTP_IF_MATCH="*"
    )
    assert response.status_code == 200, response.content
    _assert_stored_and_shown_as_zero(editor_api)


@pytest.mark.parametrize(
    ("body", "media"),
    [
        (
            "overrides:\n  t:\n    max_query_capacity: -0.0\n    query_priority:\n"
            "      enabled: true\n      priorities:\n        - priority: 1\n"
            "          reserved_queriers: -0.0\n          query_attributes: [{regex: a}]\n",
            "application/yaml",
        ),
        (
            '{"overrides": {"t": {"max_query_capacity": -0.0, "query_priority": {"enabled": true,'
            ' "priorities": [{"priority": 1, "reserved_queriers": -0.0,'
            ' "query_attributes": [{"regex": "a"}]}]}}}}',
            "application/json",
        ),
    ],
    ids=["yaml", "json"],
)
def test_a_runtime_config_import_of_negative_zero_stores_zero(
    editor_api: Any, body: str, media: str
) -> None:
    response = editor_api.put(URL, body, content_type=media)
    assert response.status_code == 200, response.content
    _assert_stored_and_shown_as_zero(editor_api)


def test_rolling_back_to_a_block_stored_with_negative_zero_stores_zero(editor_api: Any) -> None:
    _legacy_tenant()
    editor_api.put(TENANT, _block(0.5, 1), format="json", HTTP_IF_MATCH="*")
    revision = ConfigRevision.objects.get()
    assert _zeros(revision.before) == [0, 0]  # the old block, -0.0 as it was stored
    response = editor_api.post(f"/api/v1/revisions/{revision.pk}/rollback/")
    assert response.status_code == 201, response.content
    _assert_stored_and_shown_as_zero(editor_api)


def test_rolling_back_an_import_over_a_block_stored_with_negative_zero_stores_zero(
    editor_api: Any,
) -> None:
    _legacy_tenant()
    body = {"overrides": {"t": _block(0.5, 1)}}
    assert editor_api.put(URL, body, format="json", HTTP_IF_MATCH="*").status_code == 200
    revision = ConfigRevision.objects.get()
    response = editor_api.post(f"/api/v1/revisions/{revision.pk}/rollback/")
    assert response.status_code == 201, response.content
    _assert_stored_and_shown_as_zero(editor_api)
