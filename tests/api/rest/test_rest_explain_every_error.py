"""`explain/` reports every problem of its body at once, unknown fields with the rest."""

from __future__ import annotations

from typing import Any

URL = "/api/v1/explain/"


def test_an_unknown_field_is_reported_beside_the_known_fields_errors(viewer_api: Any) -> None:
    body = {
        "tenant": "t1",
        "bogus": 1,
        "api_type": "nope",
        "start": "2024-01-01",
        "headers": [],
        "tenant_config": {"max_queriers_per_tenant": "x"},
    }
    response = viewer_api.post(URL, body, format="json")
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {"bogus", "api_type", "start", "headers", "tenant_config"}
    assert errors["bogus"] == ["unknown field"]
    assert errors["tenant_config"] == {"max_queriers_per_tenant": ["must be an integer, got 'x'"]}


def test_unknown_fields_alone_are_each_named(viewer_api: Any) -> None:
    response = viewer_api.post(URL, {"tenant": "t1", "zeta": 1, "alpha": 2}, format="json")
    assert response.status_code == 400
    assert response.json() == {"alpha": ["unknown field"], "zeta": ["unknown field"]}


def test_a_body_that_is_no_object_says_so(viewer_api: Any) -> None:
    response = viewer_api.post(URL, ["t1"], format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["non_field_errors"]


def test_a_draft_that_is_no_mapping_is_named_beside_the_other_errors(viewer_api: Any) -> None:
    body = {"tenant": "t1", "api_type": "nope", "tenant_config": [1]}
    response = viewer_api.post(URL, body, format="json")
    assert response.status_code == 400
    assert response.json()["tenant_config"] == ["must be a mapping"]
    assert "api_type" in response.json()
