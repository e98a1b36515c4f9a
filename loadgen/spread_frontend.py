"""`SpreadFrontend`: one load-generator frontend connected to every scheduler replica.

It sends each request to its home replica (or the next one connected) and
moves it to another replica where docs/protocol.md says the first never
took it, as a frontend of several schedulers does:

- a `rejected` 429 (that replica's share of the tenant's limit is full) or
  503 (that replica is shutting down) is sent once to the next replica;
- a replica that shuts down gracefully closes the socket with code 1000
  only after every request it accepted had its final reply, so a request
  still waiting for its `enqueued` at that close never reached its queue
  and is sent to another replica. Counting it lost, as before, reported a
  loss at about one graceful restart in seven (an enqueue written while
  the replica was closing).

With no other replica connected (a lone `--url` restarting, or every
replica down at once), such a request waits in the frontend and is sent
once a replica connects again (`connect`): the scheduler promised nothing
for it, so sending it again cannot run it twice. Before, a lone scheduler's
restart stopped the load generator, and those requests with it.

A replica lost any other way (no close frame, a kill) loses what it held:
those requests are counted in `disconnect`'s return, never answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import websockets

from loadgen.wsclients import FrontendClient, Handler

__all__ = ["CLOSE_GRACE", "SpreadFrontend"]

# Seconds a lost replica's frontend socket may take to deliver what the
# replica sent before its close. A graceful shutdown closes every socket
# one after another, so a querier socket may close first while this one
# still carries the last `failed` replies; taken for lost at once, they
# were counted as lost requests.
CLOSE_GRACE = 3.0
# docs/protocol.md, "Close codes": closed by a scheduler shutdown, after
# every request it accepted was answered.
_CLOSE_DRAINED = 1000
# `rejected` statuses that another replica may accept.
_MOVABLE = frozenset({429, 503})
# The `rejected` status of a replica shutting down: worth waiting for one to connect.
_SHUTTING_DOWN = 503
_FINAL = frozenset({"result", "failed", "rejected", "cancelled", "error"})


@dataclass
class _Sent:
    """A request with no final reply yet: where it went and what that replica said."""

    msg: dict[str, Any]
    replica: int
    retried: bool = False  # already moved once after a 429 or 503
    accepted: bool = False  # `enqueued` came back: the replica holds it
    waiting: bool = False  # no replica holds it: sent again at the next `connect`


class SpreadFrontend:
    """A frontend connected to every replica; sends to `home`.

    Giving each frontend a different `home` spreads frontends over the
    replicas. Only a request's final reply reaches `on_reply`; `retried`
    counts the requests moved to another replica. Cancels follow the
    request to the replica that holds it. `name` is given to every replica
    (`FrontendClient`), so the frontend counts once across them.

    A replica whose connection was lost (`disconnect(index)`) is passed over
    for new requests and moves until `connect(index)` opens it again. A
    request that may move while no other replica is connected waits for the
    next `connect` (`waiting`, counted in neither `on_reply` nor the lost).
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
        # Takes new requests / still has its replies read: a lost replica
        # stops the first at once and the second once its socket is done.
        self.connected = [False] * len(urls)
        self._reading = [False] * len(urls)
        # request id (JSON-encoded) -> what became of it so far
        self._pending: dict[str, _Sent] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        await asyncio.gather(*(self.connect(index) for index in range(len(self.clients))))

    @property
    def waiting(self) -> int:
        """Requests no replica holds, to be sent at the next `connect`."""
        return sum(sent.waiting for sent in self._pending.values())

    async def connect(self, index: int) -> None:
        """Open the connection to replica `index`; it takes requests once open,
        first those waiting for a replica."""
        await self.clients[index].start()
        self.connected[index] = self._reading[index] = True
        for sent in self._pending.values():
            if sent.waiting:
                sent.waiting = False
                self._move(sent, index)

    async def disconnect(self, index: int) -> int:
        """Replica `index` is lost: pass it over and close its socket; how many requests it lost.

        The socket's last replies are read first (up to CLOSE_GRACE). Then a
        request it never accepted before a graceful close goes to another
        replica, or waits for one to connect; every other one it held is
        lost, and replies still arriving are dropped, so each request is
        counted once.
        """
        self.connected[index] = False
        client = self.clients[index]
        with contextlib.suppress(TimeoutError):
            await client.wait_read(CLOSE_GRACE)
        self._reading[index] = False
        drained = client.close_code() == _CLOSE_DRAINED
        lost = 0
        for key, sent in list(self._pending.items()):
            if sent.replica != index or sent.waiting:
                continue
            if drained and not sent.accepted:
                self._move_or_wait(sent, self._next_connected(index + 1))
            else:
                del self._pending[key]
                lost += 1
        await client.close()
        return lost

    async def send(self, msg: dict[str, Any]) -> bool:
        """Send to the request's replica; False, sending nothing, when it is not connected."""
        key = json.dumps(msg.get("id"))
        if msg.get("type") == "enqueue":
            index = self._next_connected(self.home)
            if index is None:
                return False
            self._pending[key] = _Sent(msg, index)
        else:
            sent = self._pending.get(key)
            index = sent.replica if sent else self.home
            if not self.connected[index]:
                return False
        await self._send_to(index, msg)
        return True

    async def _send_to(self, index: int, msg: dict[str, Any]) -> None:
        # A socket that has just closed: `disconnect` decides, once the loss
        # is noticed, whether the request moves or is lost.
        with contextlib.suppress(websockets.ConnectionClosed):
            await self.clients[index].send(msg)

    def _move(self, sent: _Sent, index: int) -> None:
        """Send `sent` again, to replica `index`, in the background."""
        sent.replica, sent.accepted = index, False
        self.retried += 1
        task = asyncio.get_running_loop().create_task(self._send_to(index, sent.msg))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _move_or_wait(self, sent: _Sent, index: int | None) -> None:
        """Send `sent` again to replica `index`; with None (none is connected), at the next
        `connect`."""
        if index is None:
            sent.waiting = True
        else:
            self._move(sent, index)

    def _next_connected(self, start: int) -> int | None:
        """The first connected replica from `start` on, wrapping round; None if none is."""
        count = len(self.clients)
        return next(
            (i % count for i in range(start, start + count) if self.connected[i % count]), None
        )

    def _replier(self, index: int) -> Handler:
        return lambda msg: self._on_reply(index, msg)

    def _on_reply(self, index: int, msg: dict[str, Any]) -> None:
        if not self._reading[index]:
            return
        key = json.dumps(msg.get("id"))
        sent = self._pending.get(key)
        if sent is not None and sent.replica != index:
            return  # from a replica the request has left (cannot answer it now)
        kind = msg.get("type")
        if kind == "enqueued" and sent is not None:
            sent.accepted = True
        if kind == "rejected" and sent is not None and not sent.retried:
            other = self._next_connected(index + 1)
            # A replica shutting down accepted nothing: with no other one to
            # take it (a lone scheduler restarting), wait for the next to connect.
            moves = msg.get("status") in _MOVABLE and other not in (None, index)
            if moves or msg.get("status") == _SHUTTING_DOWN:
                sent.retried = True
                self._move_or_wait(sent, other if moves else None)
                return
        if kind in _FINAL:
            self._pending.pop(key, None)
        self.on_reply(msg)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*(client.close() for client in self.clients))
