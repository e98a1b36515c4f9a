"""`schedulerpb.SchedulerForFrontend/FrontendLoop`: frontends enqueue and cancel.

Exactly one reply per frontend message, in order, because the Cortex
frontend matches replies to its messages by position. A frontend opens
several loops with the same address (one per scheduler worker) and may
CANCEL on a different loop than it enqueued on, so requests are tracked per
*address*; they are cancelled when the address's last loop ends, as Cortex
does, except while the scheduler drains: then the loops end because the
frontend was answered SHUTTING_DOWN, and it still waits for its queries.

When the door closes (`close`, at the end of the shutdown drain), a loop
whose frontend has nothing queued or running ends as Cortex's scheduler
ends a FrontendLoop once it is stopping: one SHUTTING_DOWN message, then
the handler returns (status OK). Cortex sends it as the answer to the
frontend's next message (an idle loop waits in Recv until then, and its
server's GracefulStop waits for it); the door sends it at once, since the
process is about to exit, instead of waiting out the stop's grace and
resetting the stream. A Cortex frontend reads it (or, if it has already
stopped reading, its next Send fails) and enqueues on another scheduler.
A loop of a frontend that still has requests keeps them until they end.
"""

from __future__ import annotations

import asyncio
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
    querier_message,
    request_id,
)
from api.wire.grpc.streams import AbortError, answer_each, checked_read
from scheduler_core.errors import DuplicateRequest, SchedulerStopping, TooManyRequests
from scheduler_core.model import Request
from scheduler_core.pb import schedulerpb_pb2 as pb

__all__ = [
    "FORWARD_TOO_LARGE_STATUS",
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

# HTTP status of a query whose request is too large to forward to a querier.
FORWARD_TOO_LARGE_STATUS = 413
# What a forwarded message may add to an ENQUEUE without the loop's address
# besides that address: its tag and length (at most 1 + 5 bytes) and
# `isRoot` (2 bytes) less the ENQUEUE's own `type` (2 bytes); more, to be safe.
_FORWARD_GROWTH = 16


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

    def outstanding(self, address: str) -> int:
        """How many requests of `address` are queued or running."""
        frontend = self._frontends.get(address)
        return 0 if frontend is None else len(frontend.outstanding)

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
    """Serves FrontendLoop streams on one runtime.

    `max_message` is the door's message limit: an ENQUEUE whose forwarded
    message would pass it is answered 413 instead of queued (None: no limit).
    """

    def __init__(
        self,
        runtime: FrontendRuntime,
        admission: Admission,
        registry: FrontendRegistry,
        *,
        max_message: int | None = None,
    ) -> None:
        self._runtime = runtime
        self._admission = admission
        self._registry = registry
        self._max_message = max_message
        # The task serving each open loop (after its INIT), and those `close`
        # is ending, so the loop can tell that cancellation from any other.
        self._loops: dict[asyncio.Task[Any], str] = {}
        self._ending: set[asyncio.Task[Any]] = set()

    def close(self) -> None:
        """The door is closing: end every loop of a frontend with nothing in flight.

        Such a loop gets SHUTTING_DOWN and ends with status OK (see the
        module's docstring); a frontend with requests still queued or running
        keeps its loops, so those requests end as they always have. Only
        while the runtime stops (at the end of its drain), when every new
        INIT and ENQUEUE is answered SHUTTING_DOWN anyway: a door stopped
        while its runtime still takes requests leaves open loops their grace,
        as any open call.
        """
        if not self._runtime.stopping:
            return
        for task, address in list(self._loops.items()):
            if not self._registry.outstanding(address) and task not in self._ending:
                self._ending.add(task)
                task.cancel()

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
            room = None
            if self._max_message is not None:
                room = self._max_message - len(address.encode()) - _FORWARD_GROWTH
            await self._serve(context, address, room)
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

    async def _serve(self, context: _Context, address: str, room: int | None) -> None:
        """Answer the loop's messages until the frontend half-closes or `close` ends it."""
        task = asyncio.current_task()
        assert task is not None
        self._loops[task] = address
        try:
            # Each reply is computed without awaiting: on the lean door it is
            # made as the message arrives, with no task wake-up per ENQUEUE.
            await answer_each(context, lambda msg: self._reply(msg, address, room))
        except asyncio.CancelledError:
            # Only `close`'s own cancellation is taken back: one from outside
            # (the peer reset, the server's grace over) still ends the call.
            if task not in self._ending or task.uncancel():
                raise
            await context.write(_SHUTTING_DOWN)
        finally:
            del self._loops[task]
            self._ending.discard(task)

    def _reply(
        self, msg: pb.FrontendToScheduler, address: str, room: int | None = None
    ) -> pb.SchedulerToFrontend:
        if msg.type not in (pb.ENQUEUE, pb.CANCEL):
            raise AbortError(grpc.StatusCode.INVALID_ARGUMENT, f"unknown request type {msg.type}")
        if msg.type == pb.CANCEL:
            self._runtime.cancel(request_id(address, msg.queryID))
            return _OK
        if self._runtime.stopping:
            return _SHUTTING_DOWN
        try:
            request = self._build(msg, address)
            # The forwarded message swaps the ENQUEUE's `type` for `isRoot`
            # (2 bytes each) and adds the loop's address: one that carries
            # that address already (a Cortex frontend's always does) is no
            # larger forwarded than it came in, within the same limit. Any
            # other is sized, and exactly only near the limit.
            if room is not None and msg.frontendAddress != address and msg.ByteSize() > room:
                self._check_forwardable(request)
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

    def _check_forwardable(self, request: Request) -> None:
        """Raise QueryRejected (413) if the querier's message would pass the limit.

        Queued, it would fail on every querier stream it was written to (each
        ended RESOURCE_EXHAUSTED, the request re-queued once), and the
        frontend would be told "querier disconnected", not why. Refused here
        through QueryResult, as a rejection rule's 422, rather than with an
        ERROR reply: Cortex frontends before v1.20.0 (v1.15.3 among them)
        build the user's answer to an ERROR from a nil error and panic
        (fixed by cortexproject/cortex#6609), where a QueryResult reaches the
        user as it is from every Cortex and Mimir frontend.
        """
        handle = request.payload
        assert isinstance(handle, GrpcReplyHandle)
        assert self._max_message is not None
        size = querier_message(handle).ByteSize()
        if size > self._max_message:
            raise QueryRejected(
                handle,
                f"the query's httpRequest is too large to forward to a querier: the "
                f"SchedulerToQuerier message would be {size} bytes, over the scheduler's "
                f"gRPC message limit of {self._max_message} bytes",
                FORWARD_TOO_LARGE_STATUS,
            )

    def _rejected(self, exc: QueryRejected) -> pb.SchedulerToFrontend:
        """Accept the ENQUEUE, then answer the query itself with `exc.status`.

        A Cortex frontend passes a QueryResult's HTTP response to the user
        unchanged, so the user sees 422 and the rejection text, as with
        Cortex's own frontend-side rejection (or 413 and why the request is
        too large to forward). Never queued, so never on a querier.
        """
        results = self._admission.results
        if results is None:
            return pb.SchedulerToFrontend(status=pb.ERROR, error=exc.message)
        results.deliver(exc.handle, exc.status, exc.message.encode(), content_type="text/plain")
        return _OK
