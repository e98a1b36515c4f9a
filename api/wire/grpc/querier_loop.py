"""`schedulerpb.SchedulerForQuerier`: querier workers take work one at a time.

Each worker stream is one runtime worker. The protocol has no explicit
"result" message: the worker's next (empty) message after a request means
"done, ready for more", because the querier sends the result straight to the
frontend. Cancelling a request the worker is running can only be signalled
by ending its stream with an error, which is what a Cortex querier expects.

When the door closes (`close`, at the end of the shutdown drain), a stream
waiting for work ends as Cortex's scheduler ends it when its queue stops:
status UNKNOWN "queue is stopped" (a Go error returned by the handler), not
a reset. A Cortex querier logs that as its scheduler's shutdown and dials
again; a reset read as a broken transport ("stream terminated by
RST_STREAM with error code: CANCEL").
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import grpc
from google.protobuf.message import DecodeError

from api.wire.grpc.admission import GrpcReplyHandle, querier_message
from api.wire.grpc.bridge import ForeignRequests
from api.wire.grpc.streams import AbortError, checked_read, malformed
from scheduler_core.bounds import querier_id_error
from scheduler_core.errors import QuerierShuttingDown, UnknownQuerier
from scheduler_core.loops import running_loop
from scheduler_core.model import Request
from scheduler_core.pb import schedulerpb_pb2 as pb

__all__ = ["QUEUE_STOPPED", "QuerierLoopServicer", "QuerierRuntime", "to_querier_message"]

log = logging.getLogger(__name__)


_Context = grpc.aio.ServicerContext[Any, Any]

# Cortex's `queue.ErrStopped`: what its QuerierLoop returns to a worker waiting
# for work once the queue has stopped (grpc-go sends a plain error as UNKNOWN).
QUEUE_STOPPED = "queue is stopped"


class _Outcome(enum.Enum):
    DONE = "done"
    CANCELLED = "cancelled"
    ENDED = "ended"


class QuerierRuntime(Protocol):
    """The part of SchedulerRuntime the querier loop needs."""

    clock: Callable[[], float]

    def connect_querier(self, querier_id: str) -> int: ...

    async def next_request(self, querier_id: str, worker_id: int) -> Request: ...

    def cancellation(self, request_id: str) -> asyncio.Future[None]: ...

    def complete(self, request_id: str) -> Request | None: ...

    def fail_unanswered(self, request_id: str, querier_id: str) -> Request | None: ...

    def disconnect_querier_worker(self, querier_id: str, worker_id: int) -> Request | None: ...

    def notify_querier_shutdown(self, querier_id: str) -> None: ...


def to_querier_message(
    request: Request, foreign: ForeignRequests, querier_id: str, queue_seconds: float
) -> pb.SchedulerToQuerier:
    """The message a querier worker runs; a plain (non-distributed) query."""
    handle = request.payload
    if not isinstance(handle, GrpcReplyHandle):
        return foreign.message_for(request, querier_id, queue_seconds)
    return querier_message(handle)


class QuerierLoopServicer:
    """Serves QuerierLoop streams and NotifyQuerierShutdown on one runtime."""

    def __init__(self, runtime: QuerierRuntime, foreign: ForeignRequests) -> None:
        self._runtime = runtime
        self._foreign = foreign
        # Open streams per querier ID (counted per stream, never per request),
        # so `close` can end the waits of all of them.
        self._streams: Counter[str] = Counter()
        self._closed = False

    def close(self) -> None:
        """The door is closing: no stream waits for work any more.

        Every querier with an open stream is marked leaving, through the
        runtime's NotifyQuerierShutdown path: a worker waiting for work is
        woken now, and one still running a request finishes it and is
        stopped at its next dequeue (a request of its own is never dropped:
        it stays in flight until its "done", its cancellation or its stream
        breaking). Both end their stream with `QUEUE_STOPPED`, as does a
        stream opened from now on. Nothing on the per-request path changes:
        the mark is read by the dequeue the runtime does anyway.
        """
        self._closed = True
        for querier_id in self._streams:
            self._runtime.notify_querier_shutdown(querier_id)

    async def QuerierLoop(  # noqa: N802 - the gRPC method name
        self, messages: AsyncIterator[pb.QuerierToScheduler], context: _Context
    ) -> None:
        first = await checked_read(context)
        if first is grpc.aio.EOF:
            return
        assert isinstance(first, pb.QuerierToScheduler)
        problem = querier_id_error(first.querierID)
        if problem is not None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        querier_id = first.querierID
        if self._closed:
            # Connecting would clear the querier's leaving mark (a reconnect
            # means it is back), and the wait would last until the reset.
            await context.abort(grpc.StatusCode.UNKNOWN, QUEUE_STOPPED)
        worker_id = self._runtime.connect_querier(querier_id)
        self._streams[querier_id] += 1
        try:
            await self._serve(querier_id, worker_id, context)
        finally:
            self._streams[querier_id] -= 1
            if not self._streams[querier_id]:
                del self._streams[querier_id]
            self._runtime.disconnect_querier_worker(querier_id, worker_id)

    async def _serve(self, querier_id: str, worker_id: int, context: _Context) -> None:
        while True:
            try:
                request = await self._runtime.next_request(querier_id, worker_id)
            except (QuerierShuttingDown, UnknownQuerier):
                if self._closed:
                    await context.abort(grpc.StatusCode.UNKNOWN, QUEUE_STOPPED)
                # A querier that announced its shutdown gets no more work;
                # ending the stream cleanly tells its worker to stop.
                return
            cancelled = self._runtime.cancellation(request.id)
            waited = max(0.0, self._runtime.clock() - request.enqueued_at)
            message = to_querier_message(request, self._foreign, querier_id, waited)
            await context.write(message)
            try:
                outcome = await self._worker_outcome(cancelled, context)
            except BaseException:
                self._end_if_answered(request)
                raise
            if outcome is _Outcome.CANCELLED:
                await context.abort(grpc.StatusCode.CANCELLED, "query cancelled")
            if outcome is _Outcome.ENDED:
                # The request stays in flight so the caller's disconnect
                # re-queues it once or fails it to its frontend.
                self._end_if_answered(request)
                return
            if self._foreign.unanswered(request):
                # A Cortex querier says "done" even when its QueryResult call
                # to us failed (a result over our message size): completed,
                # the websocket frontend waited for ever.
                self._runtime.fail_unanswered(request.id, querier_id)
            else:
                self._runtime.complete(request.id)

    def _end_if_answered(self, request: Request) -> None:
        """Complete a websocket frontend's request whose result already came back.

        A querier sends its result before its "done", and may leave between
        the two. Left in flight, the disconnect would re-queue the request:
        it would run a second time, and stay listed (and counted) as queued
        after its frontend had its answer.
        """
        if self._foreign.answered(request.id):
            self._runtime.complete(request.id)

    async def _worker_outcome(self, cancelled: asyncio.Future[None], context: _Context) -> _Outcome:
        """Wait for the worker's "done" or the request's cancellation.

        The read is awaited in this task, and the cancellation cancels this
        task through a callback: no reading task per request, and the "done"
        resumes the servicer a loop turn sooner. The callback cancels only
        while the read is pending (`reading`): one that runs after the read
        returned must not hit the task's next await. Only a cancellation of
        ours is taken back (`uncancel`); one from outside (the peer reset, the
        server stopping) still ends the call. A "done" that was already read
        when the cancellation came wins: the result reached the frontend.
        """
        # With the loop given, current_task skips asyncio's getpid() lookup.
        task = asyncio.current_task(running_loop())
        assert task is not None
        reading, ours = True, False

        def stop_reading(_: asyncio.Future[None]) -> None:
            nonlocal ours
            if reading:
                ours = True
                task.cancel()

        cancelled.add_done_callback(stop_reading)
        refused: AbortError | None = None
        try:
            message = await context.read()
        except DecodeError as exc:
            refused = malformed(exc)
        except asyncio.CancelledError:
            if ours and task.uncancel() == 0:
                return _Outcome.CANCELLED
            raise
        finally:
            reading = False
            cancelled.remove_done_callback(stop_reading)
        if refused is not None:
            # Aborted only once the read is over: grpcio's abort awaits the
            # status going out, and a cancellation cancelling us there came
            # back as CANCELLED, whose own abort then raised "Abort already
            # called!" (the peer had the first status already).
            await context.abort(refused.code, refused.details)
        return _Outcome.ENDED if message is grpc.aio.EOF else _Outcome.DONE

    async def NotifyQuerierShutdown(  # noqa: N802 - the gRPC method name
        self, message: pb.NotifyQuerierShutdownRequest, context: _Context
    ) -> pb.NotifyQuerierShutdownResponse:
        if message.querierID:
            with contextlib.suppress(UnknownQuerier):
                self._runtime.notify_querier_shutdown(message.querierID)
        return pb.NotifyQuerierShutdownResponse()
