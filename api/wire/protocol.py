"""The JSON websocket protocol's messages: parsing, validation and replies.

Each client message type has one parser that turns a decoded JSON object
into a typed, frozen dataclass or raises `ProtocolError(field, message)`, so
consumers never look at raw dicts and every malformed message gets the same
kind of `error` reply (docs/protocol.md). Outgoing messages are built by the
small `*_message` functions so their shapes live in one place.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from api.wire.bounded_json import MAX_JSON_DEPTH, loads_bounded
from api.wire.json_codec import DuplicateJsonKey, compact_dumps
from scheduler_core.bounds import (
    INT64_MAX,
    INT64_MIN,
    cortex_step_seconds,
    duration_error,
    querier_id_error,
    quoted,
    request_times_error,
    timestamp_error,
)
from scheduler_core.federation import normalized_org_id, org_id_error, org_id_length_error
from scheduler_core.model import API_TYPES, COMPONENTS

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_MESSAGE_BYTES",
    "MAX_WORKERS",
    "MIN_WORKERS",
    "Cancel",
    "ClientId",
    "Enqueue",
    "FRONTEND_PARSERS",
    "QUERIER_PARSERS",
    "Hello",
    "ProtocolError",
    "QuerierResult",
    "Shutdown",
    "decode",
    "dumps",
    "error_message",
    "parse",
]

ClientId = str | int
MAX_MESSAGE_BYTES = 1_000_000
# Mimir forces at least 4 workers per querier so that querier-worker priority
# can give every query component one; we do the same for every layout.
MIN_WORKERS = 4
MAX_WORKERS = 256
MAX_ID_LENGTH = 256


class ProtocolError(Exception):
    """A client message that cannot be acted on; answered with an `error`.

    `field` is the offending key (None for the message as a whole) and `id`
    the client's request id when it could be read, so the client can tell
    which request failed.
    """

    def __init__(self, field: str | None, message: str, id: ClientId | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
        self.id = id


@dataclass(frozen=True, slots=True)
class Enqueue:
    id: ClientId
    tenant: str
    query: str
    api_type: str
    start: float | None
    end: float | None
    step: float | None
    headers: Mapping[str, str]
    component: str | None


@dataclass(frozen=True, slots=True)
class Cancel:
    id: ClientId


@dataclass(frozen=True, slots=True)
class Hello:
    querier_id: str
    workers: int


@dataclass(frozen=True, slots=True)
class QuerierResult:
    worker: int
    id: str
    status: int
    body: Any


@dataclass(frozen=True, slots=True)
class Shutdown:
    pass


Message = Enqueue | Cancel | Hello | QuerierResult | Shutdown
Parser = Callable[[Mapping[str, Any]], Message]


def dumps(message: Mapping[str, Any]) -> str:
    """Compact JSON: the protocol is machine-to-machine (`api.wire.json_codec`)."""
    return compact_dumps(message)


def decode(text: str | None) -> Mapping[str, Any]:
    """The JSON object of one text frame; anything else is a ProtocolError."""
    if text is None:
        raise ProtocolError(None, "binary frames are not supported; send JSON text")
    if len(text) > MAX_MESSAGE_BYTES:
        raise ProtocolError(None, f"message longer than {MAX_MESSAGE_BYTES} characters")
    try:
        data = loads_bounded(text, unique_keys=True)  # nested past MAX_JSON_DEPTH: JsonTooDeep
    except DuplicateJsonKey as exc:
        raise _duplicate_error(text, exc) from None
    except ValueError as exc:
        raise ProtocolError(None, f"malformed JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ProtocolError(None, "a message must be a JSON object")
    if _SURROGATE_ESCAPE.search(text):
        _refuse_lone_surrogates(data)
    return data


def _duplicate_error(text: str, exc: DuplicateJsonKey) -> ProtocolError:
    """A 400 naming the top-level field that holds a name given twice.

    `json` would keep the last of the two, so `{"tenant": "a", ...,
    "tenant": "b"}` would quietly be tenant b to us and tenant a to anything
    that read the first. The text is parsed again (last name wins), noting
    which objects repeat a name, to find the field and the request id.
    """
    repeating: dict[int, str] = {}

    def note(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        value = dict(pairs)
        if len(value) != len(pairs):
            counts = Counter(k for k, _ in pairs)
            repeating[id(value)] = next(k for k, n in counts.items() if n > 1)
        return value

    data = json.loads(text, object_pairs_hook=note)  # it parsed once already
    field = repeating.get(id(data))
    if field is None:
        field = next((k for k, v in data.items() if _holds(v, repeating)), None)
    rid = data.get("id") if field != "id" else None
    message = f"duplicate key {quoted(exc.key)} in one object: give each name once"
    return ProtocolError(field, message, _replyable_id(rid))


def _holds(value: Any, repeating: dict[int, str]) -> bool:
    """Whether `value` is, or contains, an object that repeated a name."""
    if isinstance(value, dict):
        return id(value) in repeating or any(_holds(v, repeating) for v in value.values())
    if isinstance(value, list):
        return any(_holds(v, repeating) for v in value)
    return False


# A `\uD800`-`\uDFFF` escape: the only way a lone surrogate gets into a frame
# (Daphne hands us valid UTF-8). A pair (an escaped emoji) matches too, so a
# match only triggers the exact check below; frames without one skip it.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _refuse_lone_surrogates(data: Mapping[str, Any]) -> None:
    """A 400 naming the first field holding a lone UTF-16 surrogate.

    Such text cannot be written as UTF-8: queued, it failed later, far from
    its sender (classification, a Cortex querier's stream, the operator
    views that list it), as the REST API and gRPC frontends refuse it.
    """
    for key, value in data.items():
        try:
            json.dumps([key, value], ensure_ascii=False).encode()
        except UnicodeEncodeError:
            # The key itself may be the bad text, and a reply cannot carry it.
            field = key if _encodes(key) else None
            raise ProtocolError(
                field,
                "text must not contain a lone UTF-16 surrogate (\\ud800-\\udfff)",
                _replyable_id(data.get("id")),
            ) from None


def _replyable_id(rid: Any) -> ClientId | None:
    """The client's id as an error reply can carry it, or None."""
    if isinstance(rid, bool):
        return None
    return rid if isinstance(rid, int) or (isinstance(rid, str) and _encodes(rid)) else None


def _encodes(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def parse(data: Mapping[str, Any], parsers: Mapping[str, Parser]) -> Message:
    """Dispatch on `type` to the endpoint's parsers."""
    kind = data.get("type")
    parser = parsers.get(kind) if isinstance(kind, str) else None
    if parser is None:
        allowed = ", ".join(sorted(parsers))
        message = f"unknown message type {quoted(kind)}; expected one of {allowed}"
        raise ProtocolError("type", message)
    return parser(data)


def error_message(exc: ProtocolError, status: int = 400) -> dict[str, Any]:
    return {
        "type": "error",
        "id": exc.id,
        "status": status,
        "error": exc.message,
        "field": exc.field,
    }


# -- field readers -------------------------------------------------------------


def _client_id(data: Mapping[str, Any]) -> ClientId:
    value = data.get("id")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ProtocolError("id", "id must be a string or an integer")
    if isinstance(value, str) and not 0 < len(value) <= MAX_ID_LENGTH:
        raise ProtocolError("id", f"id must be 1 to {MAX_ID_LENGTH} characters", value or None)
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        # As bounded as a string id: a 400-digit number was kept and echoed.
        raise ProtocolError("id", f"an integer id must be within {INT64_MIN}..{INT64_MAX}")
    return value


def _text(
    data: Mapping[str, Any], key: str, rid: ClientId | None, *, required: bool, limit: int
) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        shape = "a non-empty string" if required else "a string"  # optional: may be empty
        raise ProtocolError(key, f"{key} must be {shape}", rid)
    if len(value) > limit:
        raise ProtocolError(key, f"{key} is longer than {limit} characters", rid)
    return value


def _tenant(data: Mapping[str, Any], rid: ClientId) -> str:
    """An org ID as Cortex reads `X-Scope-OrgID`: tenant IDs `tenant.ValidTenantID` accepts.

    Several joined by "|" are a federated request, queued under the whole
    ID (normalised: sorted, each tenant once) with its tenants' combined
    limits, as on the gRPC door. Any other ID
    would queue under a tenant no config can name, and that the inspector's
    tenant links and cancels (which refuse such IDs) cannot reach.
    """
    value = data.get("tenant")
    if not isinstance(value, str) or not value:
        raise ProtocolError("tenant", "tenant must be a non-empty string", rid)
    # Before its tenants are read: each costs the loop time (`org_id_length_error`).
    problem = org_id_length_error(value, "tenant") or org_id_error(value)
    if problem is not None:
        raise ProtocolError("tenant", problem, rid)
    return normalized_org_id(value)


def _number(data: Mapping[str, Any], key: str, rid: ClientId | None) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProtocolError(key, f"{key} must be a number (unix seconds) or null", rid)
    if isinstance(value, int) and value.bit_length() > 63:
        # float() of a JSON integer of hundreds of digits overflows; no time or
        # duration Prometheus accepts is that large.
        problem = duration_error(value) if key == "step" else timestamp_error(value)
        raise ProtocolError(key, f"{key} {problem}", rid)
    if not math.isfinite(value):
        raise ProtocolError(key, f"{key} must be a number (unix seconds) or null", rid)
    return float(value)


def _headers(data: Mapping[str, Any], rid: ClientId) -> Mapping[str, str]:
    value = data.get("headers")
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ProtocolError("headers", "headers must be an object of strings", rid)
    return dict(value)


def _choice(
    data: Mapping[str, Any], key: str, options: tuple[str, ...], rid: ClientId, default: str | None
) -> str | None:
    # A null is "not given", as for every optional field: the default, not
    # a None that an `api_type` has no meaning for.
    value = data.get(key)
    if value is None:
        return default
    if value in options:
        return value  # type: ignore[no-any-return]
    raise ProtocolError(key, f"{key} must be one of {', '.join(options)}", rid)


def _integer(data: Mapping[str, Any], key: str, default: int | None, rid: ClientId | None) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(key, f"{key} must be an integer", rid)
    return value


# -- parsers -------------------------------------------------------------------


def parse_enqueue(data: Mapping[str, Any]) -> Enqueue:
    rid = _client_id(data)
    start, end = _number(data, "start", rid), _number(data, "end", rid)
    step = _number(data, "step", rid)
    if step is not None:
        # As the gRPC door and Cortex read it; kept as sent, 0.9996 matched
        # a query_step_limit of 1s here (rounded) but not there (truncated).
        step = cortex_step_seconds(step)
    # The same check as explain's: times Prometheus accepts, start <= end, step > 0.
    problem = request_times_error(start, end, step)
    if problem is not None:
        raise ProtocolError(problem.field, problem.message, rid)
    # Without an api_type, a step says it is a range query, as Prometheus' API does.
    default_type = "query" if step is None else "query_range"
    api_type = _choice(data, "api_type", API_TYPES, rid, default_type)
    assert api_type is not None
    return Enqueue(
        id=rid,
        tenant=_tenant(data, rid),
        query=_text(data, "query", rid, required=False, limit=MAX_MESSAGE_BYTES),
        api_type=api_type,
        start=start,
        end=end,
        step=step,
        headers=_headers(data, rid),
        component=_choice(data, "component", COMPONENTS, rid, None),
    )


def parse_cancel(data: Mapping[str, Any]) -> Cancel:
    return Cancel(id=_client_id(data))


def parse_hello(data: Mapping[str, Any]) -> Hello:
    querier_id = _text(data, "querier_id", None, required=True, limit=MAX_ID_LENGTH)
    problem = querier_id_error(querier_id)
    if problem is not None:
        raise ProtocolError("querier_id", problem)
    workers = _integer(data, "workers", MIN_WORKERS, None)
    if not 1 <= workers <= MAX_WORKERS:
        raise ProtocolError("workers", f"workers must be between 1 and {MAX_WORKERS}")
    return Hello(querier_id=querier_id, workers=max(workers, MIN_WORKERS))


def parse_result(data: Mapping[str, Any]) -> QuerierResult:
    rid = data.get("id")
    if not isinstance(rid, str) or not rid:
        raise ProtocolError("id", "id must be the request id sent in `request`")
    worker = _integer(data, "worker", None, rid)
    status = _integer(data, "status", 200, rid)
    if not 100 <= status <= 599:
        raise ProtocolError("status", "status must be an HTTP status code", rid)
    return QuerierResult(worker=worker, id=rid, status=status, body=data.get("body"))


def parse_shutdown(data: Mapping[str, Any]) -> Shutdown:
    return Shutdown()


FRONTEND_PARSERS: dict[str, Parser] = {"enqueue": parse_enqueue, "cancel": parse_cancel}
QUERIER_PARSERS: dict[str, Parser] = {
    "hello": parse_hello,
    "result": parse_result,
    "shutdown": parse_shutdown,
}
