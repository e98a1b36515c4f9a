"""`Accept` ranges with `q=0` are not acceptable (RFC 9110 12.5.1)."""

from __future__ import annotations

from typing import Any

import pytest

EXPORT = "/api/v1/runtime-config/"


@pytest.mark.parametrize(
    ("accept", "served"),
    [
        ("application/yaml;q=0, application/json", "application/json"),
        ("application/json;q=0, application/yaml", "application/yaml"),
        ("application/yaml; q=0.0, */*", "application/json"),
        ("application/yaml;q=0.5, application/json;q=0", "application/yaml"),
        ("application/yaml", "application/yaml"),
    ],
)
def test_a_type_refused_with_q_0_is_never_served(viewer_api: Any, accept: str, served: str) -> None:
    response = viewer_api.get(EXPORT, HTTP_ACCEPT=accept)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith(served)


def test_refusing_every_type_an_endpoint_writes_is_406(viewer_api: Any) -> None:
    response = viewer_api.get("/api/v1/tenants/", HTTP_ACCEPT="application/json;q=0")
    assert response.status_code == 406
