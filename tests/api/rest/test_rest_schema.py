"""The OpenAPI schema, its offline UI, and schemathesis run against it in-process."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
import yaml
from django.core.wsgi import get_wsgi_application
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.store.services import api_token_issue

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# Small and seeded, so the run stays in seconds and fails the same way twice.
EXAMPLES_PER_OPERATION = 20


def test_the_schema_is_openapi_3_and_lists_every_endpoint(viewer_api):
    response = viewer_api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    assert schema["openapi"].startswith("3.")
    assert set(schema["paths"]) == {
        "/api/v1/tenants/",
        "/api/v1/tenants/{tenant_id}/",
        "/api/v1/tenants/{tenant_id}/yaml/",
        "/api/v1/tenants/{tenant_id}/rule-stats/",
        "/api/v1/tenants/{tenant_id}/dry-run/",
        "/api/v1/settings/",
        "/api/v1/explain/",
        "/api/v1/queue/",
        "/api/v1/queue/requests/",
        "/api/v1/queue/requests/{request_id}/",
        "/api/v1/queue/requests/{request_id}/cancel/",
        "/api/v1/queue/cancel/",
        "/api/v1/queriers/",
        "/api/v1/runtime-config/",
        "/api/v1/revisions/",
        "/api/v1/revisions/compare/",
        "/api/v1/revisions/{revision_id}/",
        "/api/v1/revisions/{revision_id}/rollback/",
        "/api/v1/simulate/",
        "/api/v1/simulate/{run_id}/",
        "/api/v1/recording/",
    }
    assert schema["components"]["securitySchemes"]["bearerToken"]["scheme"] == "bearer"


@pytest.mark.parametrize("page", ["swagger-ui", "redoc"])
def test_the_docs_ui_loads_its_assets_locally(viewer_api, page):
    response = viewer_api.get(f"/api/v1/schema/{page}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/drf_spectacular_sidecar/" in html
    assert "cdn.jsdelivr.net" not in html and "unpkg.com" not in html


def _seed(client: Any) -> None:
    """Some state, so generated ids and names sometimes hit real objects."""
    body = {"query_priority": {"enabled": True, "priorities": []}}
    client.put("/api/v1/tenants/t1/", body, format="json")
    client.put("/api/v1/tenants/0/", {"max_queriers_per_tenant": 1}, format="json")


def test_schemathesis_finds_no_server_error_or_schema_violation(editor_api):
    _seed(editor_api)
    _, token = api_token_issue(name="schemathesis", role="editor")
    headers = {"Authorization": f"Bearer {token}"}
    schema = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
    schema.app = get_wsgi_application()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 14

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def run(case: Any) -> None:
            case.call_and_validate(headers=headers, checks=CHECKS)

        run()
