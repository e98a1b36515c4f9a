"""Protocol clients over the `websockets` library, for the load generator and benchmark.

They speak docs/protocol.md exactly as any external frontend or querier
would, over a real socket, so `manage.py loadgen` and `manage.py loadtest`
exercise the same path as production traffic. Against several scheduler
replicas (scale-out), a querier connects to every replica
(`queriers_everywhere`) and a frontend (`SpreadFrontend`) sends to its home
replica and retries a 429 once on another, as Mimir's frontends do;
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
    "QuerierClient",
    "SpreadFrontend",
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


_FINAL = frozenset({"result", "failed", "rejected", "cancelled", "error"})


class SpreadFrontend:
    """A frontend connected to every replica; sends to `home`, retries a 429 once.

    Giving each frontend a different `home` spreads frontends over the
    replicas. A request a replica refuses with 429 (that replica's share of
    the tenant's limit is full) goes once to the next replica; only the final
    reply reaches `on_reply`, and `retried` counts the second tries. Cancels
    follow the request to the replica that holds it. `name` is given to every
    replica (`FrontendClient`), so the frontend counts once across them.

    A replica whose connection was lost (`disconnect(index)`) is passed over,
    for new requests and for 429 retries, until `connect(index)` opens it
    again; the requests it held are lost with the connection and never reach
    `on_reply`.
    """

    def __init__(
        self,
        urls: Sequence[str],
        token: str,
        on_reply: Handler,
        *,
        home: int = 0,
        name: str | None = None,
    ) -> None:
        if not urls:
            raise ValueError("a frontend needs at least one scheduler URL")
        self.on_reply = on_reply
        self.home = home % len(urls)
        self.retried = 0
        self.clients = [
            FrontendClient(url, token, self._replier(index), name=name)
            for index, url in enumerate(urls)
        ]
        self.connected = [False] * len(urls)
        # request id (JSON-encoded) -> [enqueue message, replica index, retried?]
        self._pending: dict[str, list[Any]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        await asyncio.gather(*(self.connect(index) for index in range(len(self.clients))))

    async def connect(self, index: int) -> None:
        """Open the connection to replica `index`; it takes requests once open."""
        await self.clients[index].start()
        self.connected[index] = True

    async def disconnect(self, index: int) -> int:
        """Replica `index` is lost: pass it over and close its socket; how many requests it held.

        Replies still arriving on that socket are dropped, so each request is
        counted once: lost here, or answered through `on_reply`.
        """
        self.connected[index] = False
        lost = [key for key, entry in self._pending.items() if entry[1] == index]
        for key in lost:
            del self._pending[key]
        await self.clients[index].close()
        return len(lost)

    async def send(self, msg: dict[str, Any]) -> bool:
        """Send to the request's replica; False, sending nothing, when it is not connected."""
        key = json.dumps(msg.get("id"))
        if msg.get("type") == "enqueue":
            index = self._next_connected(self.home)
            if index is None:
                return False
            self._pending[key] = [msg, index, False]
        else:
            entry = self._pending.get(key)
            index = entry[1] if entry else self.home
            if not self.connected[index]:
                return False
        await self._send_to(index, msg)
        return True

    async def _send_to(self, index: int, msg: dict[str, Any]) -> None:
        # A socket that has just closed: the request is lost with its replica,
        # and counted so by `disconnect` once the loss is noticed.
        with contextlib.suppress(websockets.ConnectionClosed):
            await self.clients[index].send(msg)

    def _next_connected(self, start: int) -> int | None:
        """The first connected replica from `start` on, wrapping round; None if none is."""
        count = len(self.clients)
        return next(
            (i % count for i in range(start, start + count) if self.connected[i % count]), None
        )

    def _replier(self, index: int) -> Handler:
        return lambda msg: self._on_reply(index, msg)

    def _on_reply(self, index: int, msg: dict[str, Any]) -> None:
        if not self.connected[index]:
            return
        key = json.dumps(msg.get("id"))
        entry = self._pending.get(key)
        refused = msg.get("type") == "rejected" and msg.get("status") == 429
        other = self._next_connected(index + 1)
        if refused and entry is not None and not entry[2] and other not in (None, index):
            entry[1], entry[2] = other, True
            self.retried += 1
            task = asyncio.get_running_loop().create_task(self._send_to(entry[1], entry[0]))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        if msg.get("type") in _FINAL:
            self._pending.pop(key, None)
        self.on_reply(msg)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*(client.close() for client in self.clients))
