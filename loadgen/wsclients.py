"""Protocol clients over the `websockets` library, for the load generator and benchmark.

They speak docs/protocol.md exactly as any external frontend or querier
would, over a real socket, so `manage.py loadgen` and `manage.py loadtest`
exercise the same path as production traffic. Against several scheduler
replicas (scale-out), a querier connects to every replica
(`queriers_everywhere`) and a frontend (loadgen.spread_frontend) sends to
its home replica and moves a request another replica may take;
`wait_closed` says when a socket is gone, so loadgen.replicas can reconnect.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import websockets

__all__ = [
    "FrontendClient",
    "Handler",
    "QuerierClient",
    "queriers_everywhere",
    "wait_closed",
    "ws_connect",
]

log = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], None]


async def ws_connect(url: str, token: str) -> Any:
    """Open a socket with `Authorization: Bearer`; raises if the server refuses."""
    return await websockets.connect(
        url,
        additional_headers={"Authorization": f"Bearer {token}"},
        max_size=2**22,
        ping_interval=None,
        compression=None,
    )


async def wait_closed(ws: Any) -> websockets.ConnectionClosed:
    """Once the socket has closed, by either side: why, in websockets' words."""
    await ws.wait_closed()
    return ws.protocol.close_exc


class QuerierClient:
    """A querier with N workers; `latency(request)` says how long each takes.

    A zero latency answers inline, without a task per request, so the
    benchmark measures the server and not the client's task churn.
    `on_request(msg)` / `on_ready(worker)` let the benchmark see each worker
    become busy and idle. After `close()`, `start()` connects it again.
    """

    def __init__(
        self,
        url: str,
        token: str,
        querier_id: str,
        *,
        workers: int = 4,
        latency: Callable[[dict[str, Any]], float] = lambda _: 0.0,
        on_request: Handler | None = None,
        on_ready: Callable[[int], None] | None = None,
    ) -> None:
        self.url, self.token, self.querier_id = url, token, querier_id
        self.workers = workers
        self.worker_ids: list[int] = []
        self.latency = latency
        self.on_request = on_request
        self.on_ready = on_ready
        self.served = 0
        self.ws: Any = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.ws = await ws_connect(self.url, self.token)
        hello = {"type": "hello", "querier_id": self.querier_id, "workers": self.workers}
        await self.ws.send(json.dumps(hello))
        welcome = json.loads(await self.ws.recv())
        if welcome.get("type") != "welcome":
            raise RuntimeError(f"querier {self.querier_id}: expected welcome, got {welcome}")
        self.worker_ids = list(welcome["workers"])
        if self.on_ready is not None:
            for worker in self.worker_ids:
                self.on_ready(worker)
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in self.ws:
                msg = json.loads(raw)
                if msg.get("type") != "request":
                    continue
                if self.on_request is not None:
                    self.on_request(msg)
                delay = self.latency(msg)
                if delay <= 0:
                    await self._answer(msg)
                else:
                    task = asyncio.get_running_loop().create_task(self._answer_later(msg, delay))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)

    async def _answer_later(self, msg: dict[str, Any], delay: float) -> None:
        await asyncio.sleep(delay)
        with contextlib.suppress(websockets.ConnectionClosed):
            await self._answer(msg)

    async def _answer(self, msg: dict[str, Any]) -> None:
        self.served += 1
        reply = {"type": "result", "worker": msg["worker"], "id": msg["id"], "status": 200}
        reply["body"] = f"served by {self.querier_id}"
        await self.ws.send(json.dumps(reply))
        if self.on_ready is not None:
            self.on_ready(msg["worker"])

    async def close(self, *, shutdown: bool = True) -> None:
        if self.ws is None:
            return
        with contextlib.suppress(websockets.ConnectionClosed):
            if shutdown:
                await self.ws.send(json.dumps({"type": "shutdown"}))
            await self.ws.close()
        for task in list(self._tasks) + ([self._reader] if self._reader else []):
            task.cancel()


class FrontendClient:
    """A frontend connection; every reply goes to `on_reply(msg)`.

    With `name`, the socket says which frontend it is (`?frontend=`), so a
    frontend connected to several replicas counts once across them. After
    `close()`, `start()` connects it again.
    """

    def __init__(self, url: str, token: str, on_reply: Handler, *, name: str | None = None) -> None:
        self.url, self.token = url if name is None else _with_name(url, name), token
        self.on_reply = on_reply
        self.ws: Any = None
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.ws = await ws_connect(self.url, self.token)
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in self.ws:
                self.on_reply(json.loads(raw))

    async def send(self, msg: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(msg))

    async def wait_read(self, timeout: float) -> None:
        """Until every frame the server sent before its close was handed to
        `on_reply`; raises TimeoutError if the socket is still open by then."""
        if self._reader is not None:
            await asyncio.wait_for(asyncio.shield(self._reader), timeout)

    def close_code(self) -> int | None:
        """The code of the server's close frame (1006: none came); None while open."""
        return None if self.ws is None else self.ws.close_code

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(websockets.ConnectionClosed):
                await self.ws.close()
        if self._reader is not None:
            self._reader.cancel()


def _with_name(url: str, name: str) -> str:
    parts = urlsplit(url)
    query = urlencode([*parse_qsl(parts.query, keep_blank_values=True), ("frontend", name)])
    return urlunsplit(parts._replace(query=query))


def queriers_everywhere(
    urls: Sequence[str], token: str, querier_id: str, **kwargs: Any
) -> list[QuerierClient]:
    """One querier process as seen by N replicas: one connection each, same ID.

    Every replica has its own queue, so a querier must pull from all of them
    or requests queued on a replica it skipped would wait for nobody.
    """
    return [QuerierClient(url, token, querier_id, **kwargs) for url in urls]
