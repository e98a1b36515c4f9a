"""The asyncio dispatcher: one `RequestQueue` owned by one event loop.

Like Mimir's dispatcher loop, every queue operation happens on one thread
(the loop's), so the queue needs no locks. Querier workers block in
`next_request()` on a future; a single dispatcher task hands queued work to
waiting workers whenever something changed that could let one of them
proceed (an enqueue, a new waiter, a querier coming or going, a config
change). Waiting workers are served in the order they started waiting, so
no worker of a busy querier starves another.

`stop`, the drain at shutdown, comes from `RuntimeDrain` (runtime_drain.py);
`SHUTTING_DOWN`, what it fails the leftovers with, is re-exported here. The
failures a frontend is told of (`fail`, `fail_matching`, `fail_unanswered`)
come from `RuntimeFailures` (runtime_failures.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from scheduler_core.errors import (
    QuerierShuttingDown,
    SchedulerStopping,
    TooManyRequests,
    UnknownQuerier,
)
from scheduler_core.loops import running_loop
from scheduler_core.model import (
    QuerierDisconnected,
    QueueConfig,
    Request,
    TenantLimits,
)
from scheduler_core.queue import RequestQueue
from scheduler_core.runtime_drain import SHUTTING_DOWN, RuntimeDrain
from scheduler_core.runtime_failures import RuntimeFailures
from scheduler_core.snapshot import QuerierSnapshot, QueueSnapshot

__all__ = ["SHUTTING_DOWN", "SchedulerRuntime"]

log = logging.getLogger(__name__)

WorkerKey = tuple[str, int]
# What a waiting worker's future resolves to: the request, now in flight on
# that worker, and its queue wait measured at the hand-off.
Handoff = tuple[Request, float]

# A request is handed to queriers at most this many times: once, plus one
# retry after its querier vanished mid-request.
MAX_ATTEMPTS = 2


class SchedulerRuntime(RuntimeDrain, RuntimeFailures):
    """Owns the queue, the waiting workers and the periodic forget check."""

    def __init__(
        self,
        config: QueueConfig | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        observer: Any = None,
        forget_check_interval: float = 1.0,
    ) -> None:
        self.queue = RequestQueue(config or QueueConfig(), clock=clock)
        self.clock = clock
        self.observer = observer
        self._forget_check_interval = forget_check_interval
        # Insertion order is the order workers started waiting.
        self._waiters: dict[WorkerKey, asyncio.Future[Handoff]] = {}
        self._last_index: dict[WorkerKey, int] = {}
        # One fresh token per connection, so a wait outliving its worker's
        # disconnect can tell a reconnect that reused the worker id from itself.
        self._connections: dict[WorkerKey, object] = {}
        # Requests handed to a waiting worker that has not resumed yet: they
        # have not reached a querier, so undoing the hand-off refunds the attempt.
        self._handed: dict[WorkerKey, Request] = {}
        self._cancellations: dict[str, asyncio.Future[None]] = {}
        self._wake = asyncio.Event()
        self._emptied = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False

    # -- lifecycle -----------------------------------------------------------

    @property
    def stopping(self) -> bool:
        return self._stopping

    async def start(self) -> None:
        """Start the dispatcher and forget-check tasks on the running loop."""
        if self._tasks:
            return
        for coro in (self._dispatch_loop(), self._forget_loop()):
            task = running_loop().create_task(coro)
            task.add_done_callback(self._log_task_death)
            self._tasks.append(task)

    def _log_task_death(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("scheduler runtime task died", exc_info=task.exception())

    # -- frontends -----------------------------------------------------------

    def enqueue(self, request: Request) -> None:
        """Queue a request; raises TooManyRequests or SchedulerStopping."""
        if self._stopping:
            raise SchedulerStopping("scheduler is shutting down")
        try:
            self.queue.enqueue(request)
        except TooManyRequests as exc:
            # Only the limit is a rejection (a 429): told of a duplicate ID,
            # observers counted a 429 and dropped the original's tracking.
            self._notify("on_rejected", request, str(exc))
            raise
        self._notify("on_enqueued", request)
        # Handing the request to a waiting worker now, rather than on the
        # dispatcher's next turn, saves a loop step per request when idle
        # workers are the common case.
        if self._waiters:
            self._dispatch_pass()

    def cancel(self, request_id: str) -> Request | None:
        """Remove a queued request, or abandon an in-flight one."""
        request = self.queue.cancel(request_id)
        if request is None:
            return None
        cancelled = self._cancellations.pop(request_id, None)
        if cancelled is not None and not cancelled.done():
            cancelled.set_result(None)
        self._notify("on_cancelled", request)
        self._note_if_empty()
        return request

    def cancellation(self, request_id: str) -> asyncio.Future[None]:
        """A future resolved when this in-flight request is cancelled.

        Querier transports race it against the querier's reply so they can
        abort the worker's stream, as Cortex's scheduler does.
        """
        fut = self._cancellations.get(request_id)
        if fut is None:
            fut = running_loop().create_future()
            self._cancellations[request_id] = fut
        return fut

    # -- queriers ------------------------------------------------------------

    def connect_querier(self, querier_id: str) -> int:
        worker_id = self.queue.connect_querier(querier_id)
        self._connections[(querier_id, worker_id)] = object()
        self._wake.set()
        return worker_id

    async def next_request(self, querier_id: str, worker_id: int) -> Request:
        """Wait until this worker may take a request, and take it.

        `on_dispatched` is reported here, once per request returned, and
        never for a hand-off the worker did not get: observers count what
        reached queriers, so an undone hand-off must not count twice.
        """
        key = (querier_id, worker_id)
        connection = self._connections.get(key)
        while True:
            request = self._try_dequeue(key)
            if request is not None:
                wait = max(0.0, self.clock() - request.enqueued_at)
                self._notify("on_dispatched", request, querier_id, worker_id, wait)
                return request
            fut: asyncio.Future[Handoff] = running_loop().create_future()
            self._waiters[key] = fut
            try:
                request, wait = await fut
            except asyncio.CancelledError:
                self._abandon_wait(key, fut, connection)
                raise
            # Between the hand-off and this resumption a disconnect may have
            # dropped this worker (and a reconnect reused its id), or its
            # frontend cancelled the request, or a disconnect released it to
            # another worker: then it is not this worker's to run, and the
            # worker, idle again, goes back to taking work.
            if self._connections.get(key) is not connection:
                raise UnknownQuerier(f"{querier_id}/{worker_id} disconnected")
            self._handed.pop(key, None)
            if self.queue.in_flight_on(request.id, querier_id, worker_id):
                self._notify("on_dispatched", request, querier_id, worker_id, wait)
                return request

    def _abandon_wait(
        self, key: WorkerKey, fut: asyncio.Future[Handoff], connection: object
    ) -> None:
        # The dispatcher may have resolved the future in the same loop turn as
        # the cancellation; that request never reached the querier (nor was
        # it reported dispatched), so it goes back to the front without
        # spending an attempt.
        if self._waiters.get(key) is fut:
            del self._waiters[key]
        if fut.done() and not fut.cancelled() and fut.exception() is None:
            request, _ = fut.result()
            # Only a request still on this connection's worker may go back:
            # its frontend may have cancelled it, or a disconnect released it
            # (to another worker, maybe one reusing this id), before this
            # wait resumed.
            if self._connections.get(key) is not connection:
                return
            self._handed.pop(key, None)
            if self.queue.in_flight_on(request.id, *key):
                self.queue.requeue_front(request)
                request.attempts -= 1
                self._wake.set()

    def complete(self, request_id: str) -> Request | None:
        """The querier answered; its worker is free again."""
        self._cancellations.pop(request_id, None)
        request = self.queue.complete(request_id)
        if request is not None:
            self._notify("on_completed", request)
            self._note_if_empty()
        return request

    def disconnect_querier_worker(self, querier_id: str, worker_id: int) -> Request | None:
        """Drop one worker; its in-flight request is retried once, then failed.

        Returns the request that was in flight, if any.
        """
        key = (querier_id, worker_id)
        fut = self._waiters.pop(key, None)
        if fut is not None and not fut.done():
            fut.set_exception(UnknownQuerier(f"{querier_id}/{worker_id} disconnected"))
            fut.exception()  # mark retrieved: nobody may await a dropped worker
        self._last_index.pop(key, None)
        self._connections.pop(key, None)
        handed = self._handed.pop(key, None)
        request = self.queue.disconnect_querier_worker(querier_id, worker_id)
        if request is not None:
            self._cancellations.pop(request.id, None)
            if request is handed:
                # Handed over but never sent: the querier did not run it.
                request.attempts -= 1
            if request.attempts < MAX_ATTEMPTS and not self._stopping:
                if request is not handed:
                    # Its run ended here: told before the queue forgets when
                    # it began, or the querier time it held went uncounted.
                    self._notify("on_interrupted", request)
                self.queue.requeue_front(request)
            else:
                self._notify("on_failed", request, _disconnect_reason(querier_id, request))
                self._note_if_empty()
        self._wake.set()
        return request

    def notify_querier_shutdown(self, querier_id: str) -> None:
        """The querier is leaving: no new work, and its waiters are told so."""
        self.queue.notify_querier_shutdown(querier_id)
        for key in [k for k in self._waiters if k[0] == querier_id]:
            fut = self._waiters.pop(key)
            if not fut.done():
                fut.set_exception(QuerierShuttingDown(querier_id))
        self._wake.set()

    # -- configuration -------------------------------------------------------

    def set_tenant_limits(self, tenant_id: str, limits: TenantLimits) -> None:
        self.queue.set_tenant_limits(tenant_id, limits)
        self._wake.set()

    def remove_tenant_limits(self, tenant_id: str) -> None:
        self.queue.remove_tenant_limits(tenant_id)
        self._wake.set()

    def limits_batch(self) -> AbstractContextManager[None]:
        """`RequestQueue.limits_batch`: many tenants set, federated queues re-derived once."""
        return self.queue.limits_batch()

    def tenant_limits(self, tenant_id: str) -> TenantLimits:
        return self.queue.tenant_limits(tenant_id)

    @property
    def config(self) -> QueueConfig:
        return self.queue.config

    def set_config(self, config: QueueConfig) -> None:
        self.queue.set_config(config)
        self._wake.set()

    # -- views ---------------------------------------------------------------

    def snapshot(self) -> QueueSnapshot:
        """The queue's snapshot, with workers blocked in next_request marked."""
        snap = self.queue.snapshot()
        if not self._waiters:
            return snap
        waiting = self._waiters.keys()
        queriers = tuple(_mark_waiting(q, waiting) for q in snap.queriers)
        return QueueSnapshot(
            taken_at=snap.taken_at,
            layout=snap.layout,
            component_selection=snap.component_selection,
            total=snap.total,
            leaves=snap.leaves,
            tenants=snap.tenants,
            queriers=queriers,
        )

    # -- internals -----------------------------------------------------------

    def _try_dequeue(self, key: WorkerKey) -> Request | None:
        """The next request for this worker, now in flight on it; not yet reported."""
        querier_id, worker_id = key
        request, index = self.queue.dequeue(querier_id, worker_id, self._last_index.get(key, -1))
        self._last_index[key] = index
        if request is not None:
            self._note_if_empty()
        return request

    async def _dispatch_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            self._dispatch_pass()

    def _dispatch_pass(self) -> None:
        # Walks the waiters in place and drops the ended ones afterwards:
        # copying the whole dict first cost more than the hand-off itself
        # with hundreds of idle workers, and one enqueue usually ends the
        # walk at the first waiter. Nothing below adds or removes waiters
        # synchronously (futures run their callbacks on a later loop turn).
        # Served, failed, or already done (a cancelled wait): no longer waiting.
        ended: list[WorkerKey] = []
        queue = self.queue
        try:
            for key, fut in self._waiters.items():
                if not len(queue):
                    return
                if fut.done():
                    ended.append(key)
                    continue
                try:
                    request = self._try_dequeue(key)
                except (QuerierShuttingDown, UnknownQuerier) as exc:
                    ended.append(key)
                    fut.set_exception(exc)
                    continue
                if request is not None:
                    ended.append(key)
                    self._handed[key] = request
                    # The wait is measured now: the worker resumes a loop turn later.
                    fut.set_result((request, max(0.0, self.clock() - request.enqueued_at)))
        finally:
            for key in ended:
                del self._waiters[key]

    async def _forget_loop(self) -> None:
        while True:
            await asyncio.sleep(self._forget_check_interval)
            if self.queue.forget_disconnected_queriers():
                self._wake.set()

    def _note_if_empty(self) -> None:
        # What stop's drain (runtime_drain.py) waits for: nothing queued, nothing running.
        if not len(self.queue) and not self.queue.in_flight_count():
            self._emptied.set()

    def _notify(self, hook: str, *args: Any) -> None:
        method = getattr(self.observer, hook, None)
        if method is None:
            return
        try:
            method(*args)
        except Exception:
            # An observer bug (metrics, a closed socket) must never stall scheduling.
            log.exception("scheduler observer %s failed", hook)


def _disconnect_reason(querier_id: str, request: Request) -> QuerierDisconnected:
    reason = f"querier {querier_id} disconnected while running the request"
    if request.attempts > 1:
        reason += f" (after {request.attempts - 1} retry)"
    return QuerierDisconnected(reason)


def _mark_waiting(querier: QuerierSnapshot, waiting: Any) -> QuerierSnapshot:
    workers = tuple(
        w._replace(waiting=True) if (w.querier_id, w.worker_id) in waiting else w
        for w in querier.workers
    )
    return querier._replace(workers=workers)
