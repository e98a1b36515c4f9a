"""`schedulerpb.SchedulerForFrontend/FrontendLoop`: frontends enqueue and cancel.

Exactly one reply per frontend message, in order, because the Cortex
frontend matches replies to its messages by position. A frontend opens
several loops with the same address (one per scheduler worker) and may
CANCEL on a different loop than it enqueued on, so requests are tracked per
*address*; they are cancelled when the address's last loop ends, as Cortex
does, except while the scheduler drains: then the loops end because the
frontend was answered SHUTTING_DOWN, and it still waits for its queries.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import grpc

from api.wire.grpc.admission import (
    Admission,
    GrpcReplyHandle,
    InvalidEnqueue,
    QueryRejected,
    request_id,
)
from api.wire.grpc.streams import AbortError, answer_each, checked_read
from scheduler_core.errors import DuplicateRequest, SchedulerStopping, TooManyRequests
from scheduler_core.model import Request
from scheduler_core.pb import schedulerpb_pb2 as pb

__all__ = [
    "FrontendConnection",
    "FrontendLoopServicer",
    "FrontendRegistry",
    "FrontendRuntime",
    "peer_identity",
]

log = logging.getLogger(__name__)

_Context = grpc.aio.ServicerContext[Any, Any]
_OK = pb.SchedulerToFrontend(status=pb.OK)
_SHUTTING_DOWN = pb.SchedulerToFrontend(status=pb.SHUTTING_DOWN)
_TOO_MANY = pb.SchedulerToFrontend(status=pb.TOO_MANY_REQUESTS_PER_TENANT)


class FrontendRuntime(Protocol):
    """The part of SchedulerRuntime the frontend loop needs."""

    @property
    def stopping(self) -> bool: ...

    def enqueue(self, request: Request) -> None: ...

    def cancel(self, request_id: str) -> Request | None: ...


class FrontendConnection(NamedTuple):
    """One frontend address as the inspector shows it.

    `identity` is the common name of the client certificate its first loop
    showed (mutual TLS), else ""; `connected_for` counts from that loop.
    """

    address: str
    streams: int
    outstanding: int
    identity: str = ""
    connected_for: float | None = None


@dataclass(slots=True)
class _Frontend:
    since: float
    identity: str = ""
    streams: int = 0
    outstanding: set[str] = field(default_factory=set)


class FrontendRegistry:
    """Open loops and not-yet-finished request ids per frontend address.

    Ids leave through the observer hooks (completed, cancelled, failed), so
    the sets hold only requests that are queued or in flight.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._frontends: dict[str, _Frontend] = {}
        self._clock = clock

    def connect(self, address: str, identity: str = "") -> None:
        frontend = self._frontends.get(address)
        if frontend is None:
            frontend = self._frontends[address] = _Frontend(self._clock(), identity)
        frontend.streams += 1

    def disconnect(self, address: str) -> list[str]:
        """Drop one loop; returns the ids to cancel when it was the last one."""
        frontend = self._frontends[address]
        frontend.streams -= 1
        if frontend.streams > 0:
            return []
        del self._frontends[address]
        return sorted(frontend.outstanding)

    def track(self, address: str, rid: str) -> None:
        self._frontends[address].outstanding.add(rid)

    def finished(self, request: Request, *_: Any) -> None:
        handle = request.payload
        if isinstance(handle, GrpcReplyHandle):
            frontend = self._frontends.get(handle.frontend_address)
            if frontend is not None:
                frontend.outstanding.discard(request.id)

    on_completed = finished
    on_cancelled = finished
    on_failed = finished

    def connections(self) -> list[FrontendConnection]:
        now = self._clock()
        return [
            FrontendConnection(address, f.streams, len(f.outstanding), f.identity, now - f.since)
            for address, f in sorted(self._frontends.items())
        ]


def peer_identity(context: _Context) -> str:
    """The common name of the peer's verified client certificate, or "".

    grpcio fills the auth context only for a TLS peer whose certificate it
    checked (mutual TLS), so a plaintext or anonymous TLS peer has none.
    """
    names = list(context.auth_context().get("x509_common_name") or ())
    return names[0].decode("utf-8", "replace") if names else ""


class FrontendLoopServicer:
    """Serves FrontendLoop streams on one runtime."""

    def __init__(
        self, runtime: FrontendRuntime, admission: Admission, registry: FrontendRegistry
    ) -> None:
        self._runtime = runtime
        self._admission = admission
        self._registry = registry

    async def FrontendLoop(  # noqa: N802 - the gRPC method name
        self, messages: AsyncIterator[pb.FrontendToScheduler], context: _Context
    ) -> None:
        # read()/write() rather than iterating `messages`: one async layer
        # less per message on the scheduler's hottest path.
        first = await checked_read(context)
        if first is grpc.aio.EOF:
            return
        if first.type != pb.INIT or not first.frontendAddress:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no frontend address")
        address = first.frontendAddress
        if self._runtime.stopping:
            await context.write(_SHUTTING_DOWN)
            return
        self._registry.connect(address, peer_identity(context))
        try:
            await context.write(_OK)
            # Each reply is computed without awaiting: on the lean door it is
            # made as the message arrives, with no task wake-up per ENQUEUE.
            await answer_each(context, lambda msg: self._reply(msg, address))
        finally:
            outstanding = self._registry.disconnect(address)
            # While draining, a frontend's loops end because we answer them
            # SHUTTING_DOWN, not because it left: a Cortex frontend closes the
            # loop and still waits for the queries it enqueued, which queriers
            # answer straight to it. Cancelled, they would never be answered
            # (the querier's query context ends with its stream); the drain
            # runs them, and fails back whatever its deadline leaves.
            if not self._runtime.stopping:
                for rid in outstanding:
                    self._runtime.cancel(rid)

    def _reply(self, msg: pb.FrontendToScheduler, address: str) -> pb.SchedulerToFrontend:
        if msg.type not in (pb.ENQUEUE, pb.CANCEL):
            raise AbortError(grpc.StatusCode.INVALID_ARGUMENT, f"unknown request type {msg.type}")
        if msg.type == pb.CANCEL:
            self._runtime.cancel(request_id(address, msg.queryID))
            return _OK
        if self._runtime.stopping:
            return _SHUTTING_DOWN
        try:
            request = self._build(msg, address)
            self._runtime.enqueue(request)
        except TooManyRequests:
            return _TOO_MANY
        except SchedulerStopping:
            return _SHUTTING_DOWN
        except InvalidEnqueue as exc:
            return pb.SchedulerToFrontend(status=pb.ERROR, error=str(exc))
        except QueryRejected as exc:
            return self._rejected(exc)
        except DuplicateRequest:
            error = f"query ID {msg.queryID} of frontend {address} is already queued or running"
            return pb.SchedulerToFrontend(status=pb.ERROR, error=error)
        self._registry.track(address, request.id)
        return _OK

    def _build(self, msg: pb.FrontendToScheduler, address: str) -> Request:
        """The admission's request; a bug in it fails this query, not the stream.

        Raised out of `_reply`, any other exception would end the stream and
        cancel every query the frontend has on it.
        """
        try:
            return self._admission.build(msg, address)
        except (InvalidEnqueue, QueryRejected):
            raise
        except Exception as exc:
            log.exception("admitting query %s of %s failed", msg.queryID, address)
            raise InvalidEnqueue(f"internal error admitting the query: {exc}") from exc

    def _rejected(self, exc: QueryRejected) -> pb.SchedulerToFrontend:
        """Accept the ENQUEUE, then answer the query itself with 422.

        A Cortex frontend passes a QueryResult's HTTP response to the user
        unchanged, so the user sees 422 and the rejection text, as with
        Cortex's own frontend-side rejection. Never queued, so never on a
        querier.
        """
        results = self._admission.results
        if results is None:
            return pb.SchedulerToFrontend(status=pb.ERROR, error=exc.message)
        results.deliver(exc.handle, exc.status, exc.message.encode(), content_type="text/plain")
        return _OK
