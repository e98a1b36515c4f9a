"""`/ws/querier/`: queriers say hello with N workers and serve `request`s.

Each worker is one asyncio task: it awaits `runtime.next_request`, sends the
request tagged with its worker id, and waits for that worker's `result`
before asking for more, so a querier never gets more concurrent work than
it announced. A request the frontend cancelled while it ran is still
awaited (the querier is busy with it either way); its result is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any

from api.wire import runtime_host
from api.wire.consumers.base import MachineConsumer
from api.wire.consumers.guard import CLIENT_GONE
from api.wire.protocol import (
    QUERIER_PARSERS,
    Hello,
    ProtocolError,
    QuerierResult,
    Shutdown,
)
from scheduler_core.errors import QuerierShuttingDown, UnknownQuerier
from scheduler_core.model import Request

__all__ = ["QuerierConsumer", "request_message"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Worker:
    """One worker of this connection; `request` is set while it runs one."""

    worker_id: int
    request: Request | None = None
    # The querier's (status, body) for `request`, once it came. Kept here, not
    # in `woken`, which only wakes the task: cancelling the task (a close read
    # in the same turn, a revoked token) cancels the future it awaits, and the
    # disconnect still finds the result and delivers it, not a second run.
    result: tuple[int, Any] | None = None
    woken: asyncio.Future[None] | None = None
    queue_seconds: float = 0.0  # how long `request` waited, measured at the hand-off
    task: asyncio.Task[None] | None = field(default=None, repr=False)


def request_message(request: Request, worker_id: int) -> dict[str, Any]:
    return {
        "type": "request",
        "worker": worker_id,
        "id": request.id,
        "tenant": request.tenant_id,
        "query": request.query,
        "api_type": request.api_type,
        "start": request.start,
        "end": request.end,
        "step": request.step,
        "component": request.component,
        "priority": request.priority,
        "headers": dict(request.headers),
        # The actor sub-queue it waited in ("" for none), "|" between levels.
        "actor": "|".join(request.actor_path),
    }


class QuerierConsumer(MachineConsumer):
    roles = frozenset({"querier", "editor"})
    parsers = QUERIER_PARSERS
    querier_id: str | None = None  # set by hello; a refused handshake never gets one

    async def opened(self) -> None:
        self.host = await runtime_host.ensure_started()
        self.runtime = self.host.runtime
        self.querier_id: str | None = None
        self.workers: dict[int, _Worker] = {}
        self._endings: set[asyncio.Task[None]] = set()
        self.leaving = False  # this socket announced the querier's shutdown
        self.handlers = {
            Hello: self.on_hello,
            QuerierResult: self.on_result,
            Shutdown: self.on_shutdown,
        }

    async def on_hello(self, msg: Hello) -> None:
        if self.querier_id is not None:
            raise ProtocolError("type", "hello was already received on this connection")
        self.querier_id = msg.querier_id
        for _ in range(msg.workers):
            worker_id = self.runtime.connect_querier(msg.querier_id)
            self.workers[worker_id] = _Worker(worker_id)
        await self.send_message({"type": "welcome", "workers": sorted(self.workers)})
        # Started after the welcome, so no request can overtake it.
        for worker in self.workers.values():
            worker.task = asyncio.get_running_loop().create_task(self._serve(worker))
            worker.task.add_done_callback(self._worker_ended)

    def _worker_ended(self, task: asyncio.Task[None]) -> None:
        """A worker that died of an error takes the connection down the disconnect path.

        Left alone, it would hold its in-flight request forever while the
        querier stayed listed as connected.
        """
        if task.cancelled() or task.exception() is None or self.abandoned:
            return
        exc = task.exception()
        if isinstance(exc, CLIENT_GONE):
            # Its request frame met the querier's close: the disconnect puts it back.
            log.debug("querier %s left while a request was sent to it", self.querier_id)
        else:
            log.error("querier %s: a worker failed", self.querier_id, exc_info=exc)
        ending = asyncio.get_running_loop().create_task(self.abandon("worker"))
        self._endings.add(ending)
        ending.add_done_callback(self._endings.discard)

    async def on_result(self, msg: QuerierResult) -> None:
        worker = self.workers.get(msg.worker)
        if worker is None:
            raise ProtocolError("worker", f"no worker {msg.worker} on this connection", msg.id)
        if worker.request is None or worker.request.id != msg.id:
            raise ProtocolError("id", f"worker {msg.worker} is not running {msg.id}", msg.id)
        if worker.result is not None:
            return  # a second result for the same run: the first one counts
        worker.result = (msg.status, msg.body)
        if worker.woken is not None and not worker.woken.done():
            worker.woken.set_result(None)

    async def on_shutdown(self, msg: Shutdown) -> None:
        if self.querier_id is None:
            raise ProtocolError("type", "say hello before shutdown")
        self.leaving = True
        self.runtime.notify_querier_shutdown(self.querier_id)

    async def before_revoke(self) -> None:
        # No new work for a socket whose token is gone: its workers stop
        # waiting now (a cancelled wait loses nothing), and what they run
        # goes back to the queue when the socket closes (disconnect).
        tasks = [w.task for w in self.workers.values() if w.task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _serve(self, worker: _Worker) -> None:
        assert self.querier_id is not None
        querier_id = self.querier_id
        loop = asyncio.get_running_loop()
        while True:
            try:
                request = await self.runtime.next_request(querier_id, worker.worker_id)
            except QuerierShuttingDown:
                if not self.leaving:
                    await self._shut_down_elsewhere()
                return
            except UnknownQuerier:
                return
            worker.queue_seconds = max(0.0, self.runtime.clock() - request.enqueued_at)
            worker.request = request
            worker.woken = loop.create_future()
            await self.send_message(request_message(request, worker.worker_id))
            await worker.woken
            await self._finish(worker)

    async def _shut_down_elsewhere(self) -> None:
        """Another socket announced this querier ID's shutdown: say so and close.

        A Cortex querier's stream ends then, and its worker reconnects (which
        brings the querier back, `connect` resets the shutdown). Left open,
        this socket's workers stopped asking for work without a word, and
        the querier, still connected, stayed in tenants' shards for good.
        Every worker of the socket gets here; the first one closes it.
        """
        if self.leaving:
            return
        self.leaving = True
        log.warning(
            "querier %s: its shutdown was announced on another connection; closing this one",
            self.querier_id,
        )
        problem = (
            f"querier {self.querier_id} was announced as shutting down on another connection; "
            "reconnect to get work (give each querier process its own querier_id)"
        )
        await self.send_error(ProtocolError(None, problem), status=503)
        await self.close(code=1000)

    async def _finish(self, worker: _Worker) -> None:
        """The worker's result arrived: complete its request and answer the frontend."""
        request, result = worker.request, worker.result
        worker.request = worker.result = worker.woken = None
        assert request is not None and result is not None and self.querier_id is not None
        status, body = result
        if self.runtime.complete(request.id) is None:
            return  # cancelled by its frontend while it ran
        on_result = getattr(request.payload, "on_result", None)
        if on_result is None:
            return
        try:
            await on_result(request, status, body, self.querier_id, worker.queue_seconds)
        except CLIENT_GONE:
            log.debug("the frontend of %s left before its result", request.id)
        except Exception:
            log.exception("delivering the result of %s failed", request.id)

    async def disconnect(self, code: int) -> None:
        if self.querier_id is None:
            return
        tasks = [w.task for w in self.workers.values() if w.task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        # A result read before the close whose worker task was cancelled
        # first (the two frames came in one read; a revoked token stopped
        # the task): the querier did the work, so it is delivered, not run again.
        for worker in self.workers.values():
            if worker.result is not None:
                await self._finish(worker)
        # Each in-flight request goes back to the front of its queue once
        # (behind older ones put back, so in any order here they are served
        # again in arrival order), then fails to its frontend (the runtime
        # decides which).
        for worker_id in sorted(self.workers):
            self.runtime.disconnect_querier_worker(self.querier_id, worker_id)
        self.workers.clear()
