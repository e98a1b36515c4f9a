"""Query parameters read strictly, and described in the schema as they are read.

A junk value (`?offset=true`, `?reserved_idle=maybe`, `?limit=0`) is a 400
naming the parameter, never silently replaced by a default: a client whose
filter was ignored would read the wrong rows and not know it. Each reader
has its schema beside it, so the OpenAPI document states the same bounds
the server enforces (schemathesis checks both ways).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

from api.rest.schema import TENANT_ID_PART_PATTERN
from api.store.import_plan import tenant_id_part_errors
from scheduler_core.bounds import parse_decimal

__all__ = [
    "FALSE",
    "TRUE",
    "StrictLimitOffsetPagination",
    "bool_param",
    "bool_parameter",
    "choice_param",
    "int_param",
    "int_parameter",
    "tenant_id_part_param",
    "tenant_id_part_parameter",
]

TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off"})


def _refuse(name: str, message: str) -> serializers.ValidationError:
    return serializers.ValidationError({name: [message]})


def int_param(
    request: Request, name: str, *, default: int, minimum: int, maximum: int | None = None
) -> int:
    """An integer in [minimum, maximum]; absent gives `default`, empty is junk.

    An empty `?limit=` once read as absent: a client whose script lost the
    value got the default page size and no word of it, as `?limit=0` would not.
    """
    raw = request.query_params.get(name)
    if raw is None:
        return default
    raw = raw.strip()
    bounds = f"from {minimum} to {maximum}" if maximum is not None else f"of at least {minimum}"
    value = parse_decimal(raw, signed=True)
    if value is None:
        got = f"{raw[:40]!r}" if raw else "an empty value"
        raise _refuse(name, f"must be an integer {bounds}, got {got}")
    if value < minimum or (maximum is not None and value > maximum):
        raise _refuse(name, f"must be an integer {bounds}, got {value}")
    return value


def bool_param(request: Request, name: str) -> bool:
    """1/true/yes/on or 0/false/no/off (any case); absent is false, empty is junk."""
    raw = request.query_params.get(name)
    if raw is None:
        return False
    raw = raw.strip().lower()
    if raw in FALSE:
        return False
    if raw in TRUE:
        return True
    raise _refuse(name, "must be true or false (1/0, yes/no, on/off)")


def choice_param(request: Request, name: str, choices: list[str]) -> str | None:
    """One of `choices`, or None when absent or empty."""
    raw = request.query_params.get(name) or None
    if raw is not None and raw not in choices:
        raise _refuse(name, f"must be one of {', '.join(choices)}")
    return raw


def tenant_id_part_param(request: Request, name: str) -> str | None:
    """Text that can be part of a tenant ID, or None when absent or empty.

    Read as is, not stripped: the schema's pattern has no spaces either.
    """
    raw = request.query_params.get(name) or None
    if raw is not None and (problems := tenant_id_part_errors(raw, name)):
        raise _refuse(name, problems[0].message)
    return raw


def int_parameter(
    name: str, *, default: int, minimum: int, maximum: int | None = None, description: str = ""
) -> OpenApiParameter:
    schema: dict[str, Any] = {"type": "integer", "minimum": minimum, "default": default}
    if maximum is not None:
        schema["maximum"] = maximum
    return OpenApiParameter(name, schema, OpenApiParameter.QUERY, description=description)


def bool_parameter(name: str, description: str = "") -> OpenApiParameter:
    return OpenApiParameter(
        name, {"type": "boolean"}, OpenApiParameter.QUERY, description=description
    )


def tenant_id_part_parameter(name: str, description: str = "") -> OpenApiParameter:
    schema = {"type": "string", "pattern": TENANT_ID_PART_PATTERN}
    return OpenApiParameter(name, schema, OpenApiParameter.QUERY, description=description)


class StrictLimitOffsetPagination(LimitOffsetPagination):
    """DRF's limit/offset paging, but junk or out-of-range values are a 400.

    (DRF falls back to the default limit, caps it at the maximum, and reads
    a bad offset as 0.)
    """

    default_limit = 100
    max_limit = 1000

    def get_limit(self, request: Request) -> int:
        assert self.default_limit is not None and self.max_limit is not None
        return int_param(
            request, self.limit_query_param, default=self.default_limit, minimum=1,
            maximum=self.max_limit,
        )  # fmt: skip

    def get_offset(self, request: Request) -> int:
        return int_param(request, self.offset_query_param, default=0, minimum=0)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": self.limit_query_param,
                "required": False,
                "in": "query",
                "description": f"rows per page, 1..{self.max_limit}",
                "schema": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": self.max_limit,
                    "default": self.default_limit,
                },
            },
            {
                "name": self.offset_query_param,
                "required": False,
                "in": "query",
                "description": "rows to skip",
                "schema": {"type": "integer", "minimum": 0, "default": 0},
            },
        ]
