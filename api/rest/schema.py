"""OpenAPI extensions: how the schema describes our token authentication, and
the constraints the serializers cannot say.

Imported by `api.rest.views` so it is registered before drf-spectacular walks
the views. `strict_objects` is a drf-spectacular postprocessing hook
(SPECTACULAR_SETTINGS): bodies the server validates with "unknown field"
errors are `additionalProperties: false` in the schema too.
"""

from __future__ import annotations

import copy
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from scheduler_core.bounds import MAX_TENANT_ID_LENGTH, TENANT_ID_CHARACTER

__all__ = [
    "NO_NUL_PATTERN",
    "STRICT_COMPONENTS",
    "TENANT_ID_PART_PATTERN",
    "TENANT_ID_PATTERN",
    "BearerTokenScheme",
    "strict_objects",
]

# Request bodies (and their nested objects) whose unknown keys the server
# refuses: tenant blocks and settings (scheduler_core.validation), explain.
STRICT_COMPONENTS = frozenset(
    {
        "ExplainRequest",
        "TenantConfig",
        "PatchedTenantConfig",
        "QueryPriority",
        "QueryRejection",
        "PriorityDef",
        "QueryAttribute",
        "TimeWindow",
        "MinMax",
        "PatchedSettings",
    }
)


class BearerTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """`Authorization: Bearer <token>` (the `Token` keyword is accepted too)."""

    target_class = "api.rest.auth.BearerTokenAuthentication"
    name = "bearerToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "an API token from `manage.py issue_token` (viewer or editor role)",
        }


# Cortex's tenant ID rule (api.store.import_plan.tenant_id_errors) as a regex,
# and that of a part of one (tenant_id_part_errors), e.g. a search for one.
TENANT_ID_PATTERN = rf"^(?!\.\.?$){TENANT_ID_CHARACTER}{{1,{MAX_TENANT_ID_LENGTH}}}$"
TENANT_ID_PART_PATTERN = rf"^{TENANT_ID_CHARACTER}{{0,{MAX_TENANT_ID_LENGTH}}}$"
RUNTIME_CONFIG_PATH = "/api/v1/runtime-config/"


def strict_objects(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Say in the schema what the server checks but the serializers cannot.

    `STRICT_COMPONENTS` become closed objects; every `tenant_id` path
    parameter gets Cortex's tenant ID pattern; the runtime-config PUT body
    is a file whose `overrides` are required, keyed by tenant ID, each a
    tenant block whose other Cortex limits are allowed (ignored, reported).
    """
    components = result.setdefault("components", {}).setdefault("schemas", {})
    tenant = components.get("TenantConfig")
    if tenant is not None:
        open_block = copy.deepcopy(tenant)
        open_block["description"] = (
            "a tenant block of a runtime-config file: other Cortex limits are allowed, "
            "ignored and reported"
        )
        components["RuntimeConfigTenant"] = open_block
        components["RuntimeConfigFile"] = {
            "type": "object",
            "description": "a Cortex runtime-config file; other top-level sections are ignored",
            "required": ["overrides"],
            "properties": {
                "overrides": {
                    "type": "object",
                    "nullable": True,
                    # OpenAPI 3.0 has no keyword for a rule on keys (`propertyNames`
                    # is 3.1), and generators refuse a 3.0 schema that uses it.
                    "description": (
                        "the complete tenant set, keyed by tenant ID; each key must match "
                        f"`{TENANT_ID_PATTERN}` (Cortex's tenant ID rule)"
                    ),
                    "additionalProperties": {"$ref": "#/components/schemas/RuntimeConfigTenant"},
                }
            },
        }
        put = result.get("paths", {}).get(RUNTIME_CONFIG_PATH, {}).get("put")
        if put is not None:
            put.setdefault("requestBody", {})["required"] = True
            for media in put.get("requestBody", {}).get("content", {}).values():
                media["schema"] = {"$ref": "#/components/schemas/RuntimeConfigFile"}
    for name, schema in components.items():
        if name in STRICT_COMPONENTS and schema.get("type") == "object":
            schema["additionalProperties"] = False
    _attribute_rules(components)
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                if parameter.get("in") == "path" and parameter.get("name") == "tenant_id":
                    parameter["schema"] = {"type": "string", "pattern": TENANT_ID_PATTERN}
                free = parameter.get("schema", {})
                # Text with NUL is refused everywhere (api.middleware).
                if (
                    parameter.get("in") == "query"
                    and free.get("type") == "string"
                    and not {"enum", "pattern"} & set(free)
                ):
                    free["pattern"] = NO_NUL_PATTERN
    return result


# Free text parameters: anything but NUL.
NO_NUL_PATTERN = "^[^\\x00]*$"
# The fields of which a query attribute must set one (else it matches nothing).
_ATTRIBUTE_TEXT = ("regex", "api_type", "user_agent_regex", "dashboard_uid")
_ATTRIBUTE_RANGES = ("time_window", "time_range_limit", "query_step_limit")


def _attribute_rules(components: dict[str, Any]) -> None:
    """A priority needs an attribute, and an attribute needs a field set."""
    priority = components.get("PriorityDef", {}).get("properties", {})
    if "query_attributes" in priority:
        priority["query_attributes"]["minItems"] = 1
    attribute = components.get("QueryAttribute")
    if attribute is None:
        return
    branches: list[dict[str, Any]] = [
        {"required": [name], "properties": {name: {"type": "string", "minLength": 1}}}
        for name in _ATTRIBUTE_TEXT
    ]
    branches += [
        {"required": [name], "properties": {name: {"type": "object", "minProperties": 1}}}
        for name in _ATTRIBUTE_RANGES
    ]
    branches.append({"required": ["panel_id"], "properties": {"panel_id": {"minLength": 1}}})
    attribute["anyOf"] = branches
