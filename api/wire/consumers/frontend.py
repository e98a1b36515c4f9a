"""`/ws/frontend/`: query frontends enqueue and cancel; results come back here.

The runtime request id is `ws:<connection>:<n>` so ids never collide across
sockets or when a client reuses its own id after a cancel; replies carry the
client's own id. The reply handle kept in `Request.payload` points back at
this consumer: the querier consumer that ran the request (same process, same
runtime) awaits `on_result`, and the runtime host calls `on_failed`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import deque
from typing import Any

from api.wire import runtime_host
from api.wire.client_gone import log_task_failure
from api.wire.consumers.base import MachineConsumer
from api.wire.frontends import frontend_name
from api.wire.protocol import (
    FRONTEND_PARSERS,
    Cancel,
    ClientId,
    Enqueue,
    ProtocolError,
)
from api.wire.queue_rows import priority_origin
from scheduler_core.actor_path import actor_path_from_headers
from scheduler_core.classify import classify, client_headers
from scheduler_core.errors import DuplicateRequest, SchedulerStopping, TooManyRequests
from scheduler_core.federation import federated_tenants_error, org_limits
from scheduler_core.model import QueryInfo, Request, TenantLimits
from scheduler_core.rejection import REJECTION_STATUS, Verdict, judge, rejection_error
from scheduler_core.runtime import SchedulerRuntime

__all__ = [
    "CLOSE_BAD_REQUEST",
    "FrontendConsumer",
    "WebsocketReplyHandle",
    "classify_enqueue",
    "judge_enqueue",
]

log = logging.getLogger(__name__)

# A handshake whose query string is wrong (a bad `?frontend=` name): closed
# right after an `error` naming the field, since a refused handshake could
# not say which.
CLOSE_BAD_REQUEST = 4400


class WebsocketReplyHandle:
    """`Request.payload` of a websocket request: how to answer its frontend."""

    __slots__ = ("client_id", "consumer")
    transport = "websocket"

    def __init__(self, consumer: FrontendConsumer, client_id: ClientId) -> None:
        self.consumer = consumer
        self.client_id = client_id

    async def on_result(
        self, request: Request, status: int, body: Any, querier_id: str, queue_seconds: float
    ) -> None:
        await self.consumer.deliver_result(
            self.client_id, request, status, body, querier_id, queue_seconds
        )

    def on_failed(self, request: Request, reason: str) -> None:
        self.consumer.deliver_failure(self.client_id, request, reason)


def classify_enqueue(runtime: SchedulerRuntime, msg: Enqueue, now: float) -> tuple[str, int]:
    """Component (unless the frontend named one) and the tenant's priority."""
    component, verdict, _, _ = judge_enqueue(runtime, msg, now)
    return component, verdict.priority


def judge_enqueue(
    runtime: SchedulerRuntime, msg: Enqueue, now: float
) -> tuple[str, Verdict, QueryInfo, TenantLimits]:
    """Component (unless the frontend named one), the verdict, what was judged.

    Rule matching needs the parsed query, so a request with an explicit
    component is still classified when its tenant has priority or rejection
    rules enabled (the parse is cached by `scheduler_core.classify` per
    query text).
    """
    limits = org_limits(runtime, msg.tenant)
    if (
        msg.component is not None
        and not limits.query_priority.enabled
        and not limits.query_rejection.enabled
    ):
        # Not parsed (nothing needs it now); kept whole for the traffic sample.
        user_agent, dashboard_uid, panel_id = client_headers(msg.headers)
        bare = QueryInfo(
            query=msg.query,
            api_type=msg.api_type,
            start=msg.start,
            end=msg.end,
            step=msg.step,
            user_agent=user_agent,
            dashboard_uid=dashboard_uid,
            panel_id=panel_id,
        )
        return msg.component, judge(limits, bare, now), bare, limits
    config = runtime.config
    found = classify(
        query=msg.query,
        api_type=msg.api_type,
        start=msg.start,
        end=msg.end,
        step=msg.step,
        headers=msg.headers,
        now=now,
        query_ingesters_within=config.query_ingesters_within,
        query_store_after=config.query_store_after,
    )
    component = found.component if msg.component is None else msg.component
    return component, judge(limits, found.info, now), found.info, limits


class FrontendConsumer(MachineConsumer):
    roles = frozenset({"frontend", "editor"})
    parsers = FRONTEND_PARSERS
    listed = False
    frontend_name: str | None = None
    refused: ProtocolError | None = None

    async def connect(self) -> None:
        await super().connect()
        if self.accepted and self.refused is not None:
            await self.send_error(self.refused)
            await self.close(code=CLOSE_BAD_REQUEST)

    async def opened(self) -> None:
        self.host = await runtime_host.ensure_started()
        self.runtime = self.host.runtime
        self.pending: dict[ClientId, Request] = {}
        self._seq = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        # `failed` frames not written yet (see `deliver_failure`), oldest first.
        self._outbox: deque[dict[str, Any]] = deque()
        try:
            self.frontend_name = frontend_name(self.scope)
        except ProtocolError as exc:
            # Not listed and takes no work (`connect` closes it after saying
            # why); a frame that still arrives before the close is dropped.
            self.refused = exc
            self.handlers = dict.fromkeys((Enqueue, Cancel), self._dropped)
            return
        self.handlers = {Enqueue: self.on_enqueue, Cancel: self.on_cancel}
        self.host.websocket_frontends.opened(self)
        self.listed = True

    async def _dropped(self, msg: Any) -> None:
        """A frame on a socket refused for its query string."""

    async def disconnect(self, code: int) -> None:
        # Listed before the handshake is accepted, so a failure in between
        # is cleaned up too; a refused handshake never got here.
        if not self.listed:
            return
        self.host.websocket_frontends.closed(self)
        pending, self.pending = self.pending, {}
        for request in pending.values():
            self.runtime.cancel(request.id)

    async def on_enqueue(self, msg: Enqueue) -> None:
        if msg.id in self.pending:
            raise ProtocolError("id", "a request with this id is still pending", msg.id)
        if "|" in msg.tenant:
            problem = federated_tenants_error(msg.tenant, self.runtime.config.max_federated_tenants)
            if problem is not None:
                raise ProtocolError("tenant", problem, msg.id)
        now = time.time()
        component, verdict, info, limits = judge_enqueue(self.runtime, msg, now)
        rid = f"ws:{self.connection_id}:{next(self._seq)}"
        self.host.admission_log.record(msg.tenant, limits, verdict, info, component, now)
        if verdict.rejected_by is not None:
            # Never queued, so never on a querier: answered as Cortex does.
            error = rejection_error(msg.tenant, verdict.rejected_by)
            await self._rejected(msg.id, REJECTION_STATUS, error)
            return
        priority = verdict.priority
        rule, source = priority_origin(limits, verdict)
        request = Request(
            id=rid,
            tenant_id=msg.tenant,
            component=component,
            priority=priority,
            priority_rule=rule,
            priority_source=source,
            query=msg.query,
            api_type=msg.api_type,
            start=msg.start,
            end=msg.end,
            step=msg.step,
            headers=msg.headers,
            payload=WebsocketReplyHandle(self, msg.id),
            actor_path=actor_path_from_headers(msg.headers, self.runtime.config.actor_path_header),
        )
        try:
            self.runtime.enqueue(request)
        except TooManyRequests as exc:
            await self._rejected(msg.id, 429, str(exc))
            return
        except SchedulerStopping as exc:
            await self._rejected(msg.id, 503, str(exc))
            return
        except DuplicateRequest as exc:  # ids are ours and unique: a bug if seen
            raise ProtocolError("id", str(exc), msg.id) from exc
        self.pending[msg.id] = request
        await self.send_message(
            {"type": "enqueued", "id": msg.id, "component": component, "priority": priority}
        )

    async def _rejected(self, client_id: ClientId, status: int, error: str) -> None:
        await self.send_message(
            {"type": "rejected", "id": client_id, "status": status, "error": error}
        )

    async def on_cancel(self, msg: Cancel) -> None:
        request = self.pending.pop(msg.id, None)
        if request is None:
            raise ProtocolError("id", "no pending request with this id", msg.id)
        self.runtime.cancel(request.id)
        await self.send_message({"type": "cancelled", "id": msg.id})

    async def flush(self) -> None:
        """Write the `failed` replies still waiting (before a shutdown closes).

        A waiting reply always has a task to write it (`deliver_failure`).
        """
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def send_message(self, message: dict[str, Any]) -> None:
        if self._outbox:
            await self._write_outbox()
        await super().send_message(message)

    async def _write_outbox(self) -> None:
        # Popped before each write, so a frame is written once whoever writes it.
        while self._outbox:
            await super().send_message(self._outbox.popleft())

    def _take(self, client_id: ClientId, request: Request) -> bool:
        """Forget a finished request; False if it was already answered or cancelled.

        A closed socket emptied `pending`, so its late results are dropped here too.
        """
        if self.pending.get(client_id) is not request:
            return False
        del self.pending[client_id]
        return True

    async def deliver_result(
        self,
        client_id: ClientId,
        request: Request,
        status: int,
        body: Any,
        querier_id: str,
        queue_seconds: float,
    ) -> None:
        if not self._take(client_id, request):
            return
        await self.send_message(
            {
                "type": "result",
                "id": client_id,
                "status": status,
                "body": body,
                "querier": querier_id,
                "queue_seconds": round(queue_seconds, 6),
            }
        )

    def deliver_failure(self, client_id: ClientId, request: Request, reason: str) -> None:
        """Answer `failed`; called synchronously from the runtime's observer.

        The frame cannot be written here, so it waits in the outbox for a
        task, or for this consumer's next frame, which writes it first: the
        client sees every end before anything this socket says after it.
        Written by the task alone, it could follow a frame sent before the
        task ran, such as the `enqueued` of the same id accepted again.
        """
        if not self._take(client_id, request):
            return
        self._outbox.append({"type": "failed", "id": client_id, "error": reason})
        if len(self._outbox) == 1:
            # The set keeps the task alive until it is done.
            task = asyncio.get_running_loop().create_task(self._write_outbox())
            self._tasks.add(task)
            task.add_done_callback(self._outbox_written)

    def _outbox_written(self, task: asyncio.Task[None]) -> None:
        """Forget a finished outbox task; say why it failed (asyncio would only at GC)."""
        self._tasks.discard(task)
        log_task_failure(
            task,
            log,
            "frontend %s left with failed replies unwritten",
            "frontend %s: writing its replies failed",
            self.connection_id,
        )
