"""The benchmark's baseline: the same frames relayed with no scheduling.

Mounted only when `settings.LOADTEST_RELAY` is on. A frontend's `enqueue`
is acknowledged with an `enqueued` frame, as the scheduler does, and goes
to the next idle querier worker (or waits in one FIFO); the querier's
`result` goes straight back. That is the scheduler's five frames per
request without classification, limits, the queue tree and its observers.
Both sides use the same base consumer and the same JSON codec as the real
endpoints, so the ratio printed by `manage.py loadtest` measures the
scheduler, not the framework.

`?ack=0` on the frontend URL leaves the ack out (four frames per request):
the relay earlier benchmarks compared against, still printed beside it.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from api.wire.consumers.base import MachineConsumer
from api.wire.consumers.guard import CLIENT_GONE
from api.wire.json_codec import compact_dumps, loads

__all__ = ["RelayFrontendConsumer", "RelayHub", "RelayQuerierConsumer", "hub"]


class RelayHub:
    """Idle workers and waiting requests of the relay, process-wide."""

    def __init__(self) -> None:
        self.idle: deque[tuple[RelayQuerierConsumer, int]] = deque()
        self.waiting: deque[tuple[RelayFrontendConsumer, dict[str, Any]]] = deque()
        self.seq = 0

    async def submit(self, frontend: RelayFrontendConsumer, msg: dict[str, Any]) -> None:
        while self.idle:
            querier, worker = self.idle.popleft()
            if querier.open:
                await querier.run(worker, frontend, msg)
                return
        self.waiting.append((frontend, msg))

    async def ready(self, querier: RelayQuerierConsumer, worker: int) -> None:
        while self.waiting:
            frontend, msg = self.waiting.popleft()
            if frontend.open:
                await querier.run(worker, frontend, msg)
                return
        self.idle.append((querier, worker))


hub = RelayHub()


class RelayFrontendConsumer(MachineConsumer):
    roles = frozenset({"frontend", "editor"})
    open = False

    async def opened(self) -> None:
        self.open = True
        self.ack = b"ack=0" not in self.scope.get("query_string", b"").split(b"&")

    async def disconnect(self, code: int) -> None:
        self.open = False

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        msg = loads(text_data or "{}")
        if self.ack:
            # The scheduler's ack, with what a relay knows of it.
            ack = {"type": "enqueued", "id": msg.get("id"), "component": "", "priority": 0}
            await self.send(text_data=compact_dumps(ack))
        await hub.submit(self, msg)


class RelayQuerierConsumer(MachineConsumer):
    roles = frozenset({"querier", "editor"})
    open = False

    async def opened(self) -> None:
        self.open = True
        self.running: dict[int, tuple[RelayFrontendConsumer, Any]] = {}

    async def disconnect(self, code: int) -> None:
        self.open = False

    async def run(self, worker: int, frontend: RelayFrontendConsumer, msg: dict[str, Any]) -> None:
        hub.seq += 1
        self.running[worker] = (frontend, msg.get("id"))
        request = dict(msg, type="request", worker=worker, id=f"relay:{hub.seq}")
        await self.send(text_data=compact_dumps(request))

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        msg = loads(text_data or "{}")
        if msg.get("type") == "hello":
            workers = list(range(max(4, int(msg.get("workers", 4)))))
            await self.send(text_data=compact_dumps({"type": "welcome", "workers": workers}))
            for worker in workers:
                await hub.ready(self, worker)
            return
        if msg.get("type") != "result":
            return
        worker = msg.get("worker")
        frontend, client_id = self.running.pop(worker)
        if frontend.open:
            reply = {
                "type": "result",
                "id": client_id,
                "status": msg.get("status"),
                "body": msg.get("body"),
                "querier": "relay",
                "queue_seconds": 0.0,
            }
            # Not contextlib.suppress: this is the baseline's hot path, and a
            # try costs nothing until it catches.
            try:  # noqa: SIM105
                await frontend.send(text_data=compact_dumps(reply))
            except CLIENT_GONE:
                pass  # that frontend's close is on its way; this querier stays
        await hub.ready(self, worker)
