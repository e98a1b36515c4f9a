"""The OpenAPI schema, its offline UI, and schemathesis run against it in-process."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
import yaml
from django.core.wsgi import get_wsgi_application
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema
from hypothesis import HealthCheck, given, settings
from schemathesis.config import SchemathesisConfig
from schemathesis.generation.modes import GenerationMode

from api.rest.schema import NO_NUL_PATTERN, TENANT_ID_PART_PATTERN, TENANT_ID_PATTERN
from api.store.services import api_token_issue

# Small and seeded, so the run stays in about a minute and fails the same way twice.
EXAMPLES_PER_OPERATION = 15

# Every check runs (none listed: schemathesis's default is all of them), in
# both generation modes, with two allowances, each only where it is true:
# - the conditional writes answer 412 or 428 to a well-formed request whose
#   ETag is not the current one, or that has none while the object exists:
#   which version is current is server state no generator can know;
# - bodies holding tenant blocks or settings are also checked for what no
#   OpenAPI 3.0 schema can say (RE2 regex syntax, query_store_after below
#   query_ingesters_within, a tenant block's other semantic rules), so valid-
#   looking data may get the 400 that names the field; so are the revision
#   comparison's exclusive parameters (`tenant` or `scope`, not both).
# Any other rejection of valid data, acceptance of invalid data, undocumented
# status, content type or body is a failure.
_STATEFUL = ["2xx", "3xx", "401", "403", "404", "409", "412", "428", "429", "5xx"]
_STATEFUL_AND_SEMANTIC = [*_STATEFUL, "400"]
_ALLOWANCES = {
    ("PUT", "/api/v1/tenants/{tenant_id}/"): _STATEFUL_AND_SEMANTIC,
    ("PATCH", "/api/v1/tenants/{tenant_id}/"): _STATEFUL_AND_SEMANTIC,
    ("DELETE", "/api/v1/tenants/{tenant_id}/"): _STATEFUL,
    ("PATCH", "/api/v1/settings/"): _STATEFUL_AND_SEMANTIC,
    ("PUT", "/api/v1/runtime-config/"): _STATEFUL_AND_SEMANTIC,
    ("POST", "/api/v1/explain/"): [*_STATEFUL_AND_SEMANTIC],
    ("GET", "/api/v1/revisions/compare/"): _STATEFUL_AND_SEMANTIC,
}
CONFIG = {
    "operations": [
        {
            "include-method": method,
            "include-path": path,
            "checks": {"positive_data_acceptance": {"expected-statuses": statuses}},
        }
        for (method, path), statuses in _ALLOWANCES.items()
    ]
}


def test_the_schema_is_openapi_3_and_lists_every_endpoint(viewer_api):
    response = viewer_api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    assert schema["openapi"].startswith("3.")
    assert set(schema["paths"]) == {
        "/api/v1/",
        "/api/v1/tenants/",
        "/api/v1/tenants/{tenant_id}/",
        "/api/v1/tenants/{tenant_id}/yaml/",
        "/api/v1/tenants/{tenant_id}/rule-stats/",
        "/api/v1/tenants/{tenant_id}/dry-run/",
        "/api/v1/settings/",
        "/api/v1/explain/",
        "/api/v1/queue/",
        "/api/v1/queue/usage/",
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


@pytest.mark.parametrize("query", ["", "?format=json"])
def test_the_served_schema_is_valid_openapi_3_0(viewer_api, query):
    # What `manage.py spectacular --validate` checks: client generators refuse
    # a schema with keywords OpenAPI 3.0 does not have.
    response = viewer_api.get(f"/api/v1/schema/{query}")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    assert schema["openapi"].startswith("3.0")
    validate_schema(schema)


def test_the_runtime_config_file_states_the_tenant_id_rule_for_its_keys(viewer_api):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    overrides = schema["components"]["schemas"]["RuntimeConfigFile"]["properties"]["overrides"]
    assert TENANT_ID_PATTERN in overrides["description"]
    assert overrides["additionalProperties"] == {"$ref": "#/components/schemas/RuntimeConfigTenant"}


def test_the_schema_states_the_constraints_the_server_enforces(viewer_api):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    components, paths = schema["components"]["schemas"], schema["paths"]
    queue = {p["name"]: p for p in paths["/api/v1/queue/"]["get"]["parameters"]}
    assert queue["limit"]["schema"]["minimum"] == 1
    tenants = {p["name"]: p for p in paths["/api/v1/tenants/"]["get"]["parameters"]}
    assert tenants["offset"]["schema"]["minimum"] == 0
    assert tenants["limit"]["schema"]["minimum"] == 1
    body = components["RuntimeConfigFile"]
    assert body["required"] == ["overrides"]
    for name in ("ExplainRequest", "TenantConfig", "PatchedSettings", "QueryAttribute"):
        assert components[name]["additionalProperties"] is False, name
    # A cancel by filter names its set with the listing's filters, all of them.
    listing = {p["name"] for p in paths["/api/v1/queue/requests/"]["get"]["parameters"]}
    cancel = components["CancelByFilter"]["properties"]
    assert listing - {"cursor", "limit"} <= set(cancel)
    assert cancel["min_wait"]["minimum"] == 0
    revisions = {p["name"]: p for p in paths["/api/v1/revisions/"]["get"]["parameters"]}
    assert revisions["search"]["schema"]["pattern"] == TENANT_ID_PART_PATTERN
    assert revisions["key"]["schema"] == {"type": "string", "pattern": NO_NUL_PATTERN}
    patch = {p["name"]: p for p in paths["/api/v1/settings/"]["patch"]["parameters"]}
    assert patch["If-Match"]["required"] is True


@pytest.mark.parametrize(
    ("url", "parameter"),
    [
        ("/api/v1/tenants/?offset=true", "offset"),
        ("/api/v1/tenants/?offset=-1", "offset"),
        ("/api/v1/tenants/?limit=0", "limit"),
        ("/api/v1/tenants/?limit=1001", "limit"),
        ("/api/v1/tenants/?limit=", "limit"),
        ("/api/v1/tenants/?offset=", "offset"),
        ("/api/v1/queue/requests/?limit=", "limit"),
        ("/api/v1/queue/usage/?limit=%20", "limit"),
        ("/api/v1/revisions/?limit=x", "limit"),
        ("/api/v1/revisions/?kind=nope", "kind"),
        ("/api/v1/revisions/?search=a%20b", "search"),
        ("/api/v1/queriers/?reserved_idle=maybe", "reserved_idle"),
        ("/api/v1/queriers/?limit=0", "limit"),
        ("/api/v1/queue/?component=disk", "component"),
        ("/api/v1/runtime-config/?format=xml", "format"),
        ("/api/v1/runtime-config/?format=", "format"),
        ("/api/v1/queue/requests/?limit=501", "limit"),
        ("/api/v1/queue/requests/?priority=", "priority"),
        ("/api/v1/queue/requests/?min_wait=", "min_wait"),
        ("/api/v1/queue/requests/?min_wait=-1", "min_wait"),
        ("/api/v1/recording/?window_seconds=3601", "window_seconds"),
        ("/api/v1/revisions/compare/?from=-1&to=1", "from"),
        ("/api/v1/tenants/a%3Cb/rule-stats/", "tenant_id"),
        ("/api/v1/tenants/" + "x" * 151 + "/rule-stats/", "tenant_id"),
    ],
)
def test_junk_query_parameters_are_400_naming_the_parameter(viewer_api, url, parameter):
    response = viewer_api.get(url)
    assert response.status_code == 400, response.content
    assert parameter in yaml.safe_load(response.content)  # JSON, or YAML for runtime-config


@pytest.mark.parametrize("endpoint", ["dry-run", "yaml"])
def test_a_tenant_id_cortex_could_not_send_is_400_on_the_tenant_tools(editor_api, endpoint):
    body = {"yaml": "max_queriers_per_tenant: 1"} if endpoint == "yaml" else {}
    response = editor_api.post(f"/api/v1/tenants/a%3Cb/{endpoint}/", body, format="json")
    assert response.status_code == 400, response.content
    assert "invalid characters" in response.json()["tenant_id"][0]


def test_a_bad_body_is_400_before_any_precondition_is_looked_at(editor_api):
    _seed(editor_api)
    response = editor_api.put("/api/v1/tenants/t1/", {"nope": 1}, format="json")
    assert response.status_code == 400 and "nope" in response.json()
    response = editor_api.patch("/api/v1/settings/", {"layout": "x"}, format="json")
    assert response.status_code == 400 and "layout" in response.json()


def test_schemathesis_with_every_check_in_both_modes_finds_nothing(editor_api):
    _seed(editor_api)
    _, token = api_token_issue(name="schemathesis", role="editor")
    headers = {"Authorization": f"Bearer {token}"}
    schema = schemathesis.openapi.from_dict(
        SchemaGenerator().get_schema(request=None, public=True),
        config=SchemathesisConfig.from_dict(CONFIG),
    )
    schema.app = get_wsgi_application()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 14

    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES_PER_OPERATION,
                derandomize=True,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def run(case: Any) -> None:
                case.call_and_validate(headers=headers)

            run()


def test_the_schema_refuses_a_caller_without_a_role_in_the_apis_json_shape(anon_api):
    # Its renderer is the OpenAPI YAML one, which dumped DRF's error object as YAML.
    anonymous = anon_api.get("/api/v1/schema/")
    assert anonymous.status_code == 401
    assert anonymous["Content-Type"] == "application/json"
    assert anonymous["WWW-Authenticate"].startswith("Bearer")
    assert set(anonymous.json()) == {"detail"}
    _, plaintext = api_token_issue(name="fe", role="frontend")
    frontend = anon_api.get("/api/v1/schema/", HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    assert frontend.status_code == 403
    assert frontend["Content-Type"] == "application/json"
    assert set(frontend.json()) == {"detail"}


def test_every_operation_lists_406_and_every_write_413_and_415(viewer_api):
    # Every view negotiates its answer (an Accept of text/html alone is a 406)
    # and every parser limits and types its body; the schema listed these on
    # some writes only, so a generated client had no case for the rest.
    schema = SchemaGenerator().get_schema(request=None, public=True)
    missing = {
        f"{method.upper()} {path}": sorted(
            {"406", *({"413", "415"} if method in ("post", "put", "patch") else ())}
            - set(operation["responses"])
        )
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
    }
    assert {operation: codes for operation, codes in missing.items() if codes} == {}


@pytest.mark.parametrize(
    ("query", "named"),
    [("format=yaml&format=json", "format"), ("version=999", "version"), ("lang=xx", "lang")],
)
def test_the_schema_refuses_a_parameter_it_would_misread_naming_it(
    viewer_api: Any, query: str, named: str
) -> None:
    response = viewer_api.get(f"/api/v1/schema/?{query}")
    assert response.status_code == 400, response.content
    assert named in response.json()


def test_the_schema_takes_its_language_by_name(viewer_api: Any) -> None:
    for lang in ("en", "en-US"):  # language tags are read in any case
        assert viewer_api.get(f"/api/v1/schema/?lang={lang}&format=json").status_code == 200
