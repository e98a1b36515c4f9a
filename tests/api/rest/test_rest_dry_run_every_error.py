"""`tenants/{id}/dry-run/` names a bad tenant ID and the draft's errors together, as PUT does."""

from __future__ import annotations

from typing import Any


def test_a_bad_tenant_id_and_a_bad_draft_are_reported_at_once(viewer_api: Any) -> None:
    response = viewer_api.post(
        "/api/v1/tenants/a%20b/dry-run/", {"max_queriers_per_tenant": "x"}, format="json"
    )
    assert response.status_code == 400
    errors = response.json()
    assert "invalid characters" in errors["tenant_id"][0]
    assert errors["max_queriers_per_tenant"] == ["must be an integer, got 'x'"]


def test_a_bad_tenant_id_and_a_draft_that_is_no_mapping_are_reported_at_once(
    viewer_api: Any,
) -> None:
    response = viewer_api.post("/api/v1/tenants/a%20b/dry-run/", [1], format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"tenant_id", "non_field_errors"}
