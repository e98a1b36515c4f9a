"""Turn a frontend's ENQUEUE message into a queue `Request`.

Cortex's scheduler queues requests blind; we read the forwarded HTTP request
to compute the query component and the tenant's priority ourselves, so a real
Cortex frontend gets our priority rules without any change on its side.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from api.wire.queue_rows import priority_origin
from scheduler_core.actor_path import parse_actor_path
from scheduler_core.admission_log import AdmissionLog
from scheduler_core.classify import Classification, classify
from scheduler_core.cortex_http import (
    READ_HEADERS,
    ForwardedQuery,
    component_hint,
    parse_forwarded,
)
from scheduler_core.federation import (
    federated_tenants_error,
    normalized_org_id,
    org_id_error,
    org_id_length_error,
    org_limits,
)
from scheduler_core.model import (
    UNKNOWN,
    QueryInfo,
    QueueConfig,
    Request,
    TenantLimits,
)
from scheduler_core.pb import httpgrpc_pb2, schedulerpb_pb2
from scheduler_core.rejection import REJECTION_STATUS, judge, rejection_error

__all__ = [
    "Admission",
    "FEDERATION_REFUSED_STATUS",
    "GrpcReplyHandle",
    "InvalidEnqueue",
    "LimitsHost",
    "QueryRejected",
    "ResultSink",
    "classify_forwarded",
    "forwarded_query",
    "querier_message",
    "request_id",
]

log = logging.getLogger(__name__)


# The HTTP status of a federated org ID naming more tenants than
# `max_federated_tenants` allows: a client's error, as Mimir answers it.
FEDERATION_REFUSED_STATUS = 400


class InvalidEnqueue(Exception):
    """The ENQUEUE message cannot be queued; the text goes back as ERROR.

    Only for what a Cortex frontend never sends (its own checks refuse it
    first): an ERROR reply crashes Cortex frontends before v1.20.
    """


class QueryRejected(Exception):
    """A rejection rule refused the request: answer it with 422, never queue it.

    The frontend's ENQUEUE still gets OK; the 422 goes through `QueryResult`
    (which a real Cortex frontend hands to the user), as any result does.
    `status` is another HTTP status for a refusal answered the same way (413:
    too large to forward, `frontend_loop.py`; 400: too many federated tenants).
    """

    def __init__(
        self, handle: GrpcReplyHandle, message: str, status: int = REJECTION_STATUS
    ) -> None:
        super().__init__(message)
        self.handle = handle
        self.status = status
        self.message = message


class LimitsHost(Protocol):
    """The part of SchedulerRuntime admission needs."""

    @property
    def config(self) -> QueueConfig: ...

    def tenant_limits(self, tenant_id: str) -> TenantLimits: ...


class ResultSink(Protocol):
    """Where a handle sends its result (the ResultReporter)."""

    def deliver(
        self, handle: GrpcReplyHandle, status: int, body: bytes, *, content_type: str = ...
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class GrpcReplyHandle:
    """Kept in `Request.payload`: everything needed to answer the frontend.

    `transport` lets inspectors and shared observers tell gRPC requests from
    websocket ones without importing this module.
    """

    frontend_address: str
    query_id: int
    user_id: str
    stats_enabled: bool
    http_request: httpgrpc_pb2.HTTPRequest
    transport: str = "grpc"
    reporter: ResultSink | None = field(default=None, compare=False, repr=False)

    async def on_result(
        self, request: Request, status: int, body: Any, querier_id: str, queue_seconds: float
    ) -> None:
        """Answer the frontend when a websocket querier ran the request.

        Same signature as the websocket reply handle's, so the websocket
        querier transport treats both kinds of request alike. Failures are
        not handled here but by the ResultReporter observer.
        """
        if self.reporter is None:
            raise LookupError(f"no way to answer frontend {self.frontend_address}")
        self.reporter.deliver(self, status, _body_bytes(body))


def querier_message(handle: GrpcReplyHandle) -> schedulerpb_pb2.SchedulerToQuerier:
    """What a querier worker is sent for a Cortex frontend's request.

    A plain (non-distributed) query. The one definition both for sending it
    and for checking at enqueue that it will fit the door's message limit.
    """
    return schedulerpb_pb2.SchedulerToQuerier(
        queryID=handle.query_id,
        httpRequest=handle.http_request,
        frontendAddress=handle.frontend_address,
        userID=handle.user_id,
        statsEnabled=handle.stats_enabled,
        fragmentID=0,
        isRoot=True,
    )


def forwarded_query(http: httpgrpc_pb2.HTTPRequest, now: float) -> ForwardedQuery:
    """What the scheduler reads of a forwarded HTTP request.

    Same result as `parse_forwarded_request` over all headers, but only the
    few it reads are taken out of the protobuf message: copying every
    header's values into Python lists cost more than the rest of the parse.
    """
    found, _ = _read_headers(http, "")
    return parse_forwarded(http.method, http.url, found, http.body, now=now)


def _read_headers(
    http: httpgrpc_pb2.HTTPRequest, actor_header: str
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The headers the parse reads (first value each) and the actor path, in one pass.

    `actor_header` is lower-cased; as `actor_path_from_pairs`, the first
    header of that name with a value names the path.
    """
    found: dict[str, str] = {}
    actor: tuple[str, ...] | None = None
    for header in http.headers:
        lower = header.key.lower()
        if lower in READ_HEADERS and lower not in found:
            values = header.values
            if values:
                found[lower] = values[0]
        if actor is None and lower == actor_header:
            values = header.values
            if values:
                actor = parse_actor_path(values[0])
    return found, actor or ()


def classify_forwarded(
    forwarded: ForwardedQuery,
    now: float,
    config: QueueConfig,
    classifier: Callable[..., Classification] = classify,
) -> Classification:
    """Component and priority-matching view, with `config`'s ingester/store windows."""
    return classifier(
        query=forwarded.query,
        api_type=forwarded.api_type,
        start=forwarded.start,
        end=forwarded.end,
        step=forwarded.step,
        headers=forwarded.headers,
        now=now,
        query_ingesters_within=config.query_ingesters_within,
        query_store_after=config.query_store_after,
        matchers=forwarded.matchers,
    )


def request_id(frontend_address: str, query_id: int) -> str:
    """Queue-wide id: query IDs are unique per frontend only, so add the address."""
    return f"grpc:{frontend_address}:{query_id}"


class Admission:
    """Builds requests for one runtime; reads limits from it on every call.

    Reading limits per request (instead of caching) means a rule edited in
    the browser applies to the very next enqueue.
    """

    def __init__(
        self,
        host: LimitsHost,
        *,
        wall_clock: Callable[[], float] = time.time,
        classifier: Callable[..., Classification] = classify,
        results: ResultSink | None = None,
        admission_log: AdmissionLog | None = None,
    ) -> None:
        self._host = host
        self.results = results
        self.admission_log = admission_log
        self._wall_clock = wall_clock
        self._classify = classifier

    def build(self, msg: schedulerpb_pb2.FrontendToScheduler, frontend_address: str) -> Request:
        """The request to queue for this ENQUEUE; raises InvalidEnqueue, or
        QueryRejected when a rejection rule of the tenant matches it."""
        if msg.protobufRequest:
            raise InvalidEnqueue("protobuf-encoded requests are not supported; send httpRequest")
        if not msg.HasField("httpRequest"):
            raise InvalidEnqueue("enqueue without httpRequest")
        # Each field read once: a protobuf attribute costs a lookup per read.
        user = msg.userID
        query_id = msg.queryID
        # Cortex's checks, in its words: a Cortex frontend never sends
        # another org ID, but any gRPC client may.
        # Its length first, read before anything walks its tenants: a Cortex
        # frontend cannot forward a longer one, and 1M tenants held the loop 8 s.
        problem = org_id_length_error(user, "userID") or org_id_error(user)
        if problem is not None:
            raise InvalidEnqueue(problem)
        http = msg.httpRequest
        # Unlike the checks above, one a Cortex frontend's own checks pass:
        # answered through QueryResult, as Mimir answers it (400), since an
        # ERROR reply crashes Cortex frontends before v1.20 (`frontend_loop`).
        # Counted on the ID as sent (each tenant once), before sorting a
        # refused one's tenants: a Cortex frontend sends it sorted already.
        too_many = federated_tenants_error(user, self._host.config.max_federated_tenants)
        if too_many is not None:
            refused = self._handle(msg, user, query_id, http, frontend_address)
            raise QueryRejected(refused, too_many, FEDERATION_REFUSED_STATUS)
        user = normalized_org_id(user)
        handle = self._handle(msg, user, query_id, http, frontend_address)
        now = self._wall_clock()
        found, actor = _read_headers(http, self._host.config.actor_path_header.lower())
        forwarded = parse_forwarded(http.method, http.url, found, http.body, now=now)
        component, info = self._classification(forwarded, now)
        component = component_hint(list(msg.additionalQueueDimensions)) or component
        limits = org_limits(self._host, user)
        rid = request_id(frontend_address, query_id)
        verdict = judge(limits, info, now)
        if self.admission_log is not None:
            self.admission_log.record(user, limits, verdict, info, component, now)
        if verdict.rejected_by is not None:
            raise QueryRejected(handle, rejection_error(user, verdict.rejected_by))
        rule, source = priority_origin(limits, verdict)
        return Request(
            id=rid,
            tenant_id=user,
            component=component,
            priority=verdict.priority,
            priority_rule=rule,
            priority_source=source,
            query=forwarded.query,
            api_type=forwarded.api_type,
            start=forwarded.start,
            end=forwarded.end,
            step=forwarded.step,
            headers=forwarded.headers,
            payload=handle,
            actor_path=actor,
        )

    def _handle(
        self,
        msg: schedulerpb_pb2.FrontendToScheduler,
        user: str,
        query_id: int,
        http: httpgrpc_pb2.HTTPRequest,
        frontend_address: str,
    ) -> GrpcReplyHandle:
        """The reply handle; `query_id` and `http` as `build` read them (each field once)."""
        return GrpcReplyHandle(
            frontend_address=frontend_address,
            query_id=query_id,
            user_id=user,
            stats_enabled=msg.statsEnabled,
            http_request=http,
            reporter=self.results,
        )

    def _classification(self, forwarded: ForwardedQuery, now: float) -> tuple[str, QueryInfo]:
        try:
            result = classify_forwarded(forwarded, now, self._host.config, self._classify)
        except Exception:
            # A classifier bug must cost one request its component, never the
            # frontend its stream: every other request on it would fail too.
            log.exception("classifying %s failed; queueing it as unknown", forwarded.api_type)
            return UNKNOWN, _bare_info(forwarded)
        return str(result.component), result.info


def _body_bytes(body: Any) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body).encode()


def _bare_info(forwarded: ForwardedQuery) -> QueryInfo:
    return QueryInfo(
        query=forwarded.query,
        api_type=forwarded.api_type,
        start=forwarded.start,
        end=forwarded.end,
        step=forwarded.step,
        user_agent=forwarded.headers.get("User-Agent", ""),
        dashboard_uid=forwarded.headers.get("X-Dashboard-Uid", ""),
        panel_id=forwarded.headers.get("X-Panel-Id", ""),
        matchers=forwarded.matchers,
    )
