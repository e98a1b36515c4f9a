"""`manage.py loadgen`'s websocket clients kept connected to every replica while it runs.

One replica's sockets (its querier connections and each frontend's
connection to it) live and die together: a replica that exits or restarts
closes all of them. `Replicas.watch()` waits for the first to close, then
closes the rest, so the frontends pass that replica over
(`SpreadFrontend.disconnect`), and reconnects after 1 s, doubling to 10 s,
until the replica takes connections again (docs/operations.md: a rolling
restart is carried by the other replicas, and a restarted one gets traffic
again). Requests that were waiting on the lost replica are lost with its
connection, and counted in `lost`, never as answered; except those a
replica shutting down gracefully never accepted, which go to another
replica (loadgen.spread_frontend).

A lone replica lost (restarted) is reconnected the same way: it had stopped
the load generator for good, while a restart is over in seconds. What its
graceful shutdown never accepted waits in the frontends and is sent again
once it is back (loadgen.spread_frontend). `watch()` raises only when no
replica has been connected for `give_up` seconds (`NoReplicaReachable`), or
at once when a socket is closed because its token is refused (4001, 4003:
a reconnect would be refused too).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence

import websockets

from loadgen.spread_frontend import SpreadFrontend
from loadgen.wsclients import QuerierClient, wait_closed

__all__ = ["NoReplicaReachable", "Replicas"]

# Seconds before the first reconnect; doubled after each failure up to RETRY_MAX.
RETRY_FIRST = 1.0
RETRY_MAX = 10.0
# What a replica that is down or restarting answers a new connection with:
# refused, a handshake it does not finish, a socket closed before `welcome`.
_CONNECT_ERRORS = (OSError, TimeoutError, websockets.WebSocketException, RuntimeError)
# docs/protocol.md, "Close codes": its token revoked or expired, or its role refused.
_TOKEN_REFUSED = frozenset({4001, 4003})


class NoReplicaReachable(Exception):
    """The load generator lost its last replica and none came back in time."""


class Replicas:
    """The websocket clients of every replica; `start()`, then `watch()` until it raises.

    `queriers[i]` are the querier connections to replica `i` (`names[i]`, the
    URL it was given as); each of `frontends` holds a connection to every
    replica. `give_up`: the seconds none may be connected before `watch()`
    raises. `warn(line)` is told when a replica is lost and when it is back.
    """

    def __init__(
        self,
        names: Sequence[str],
        queriers: Sequence[Sequence[QuerierClient]],
        frontends: Sequence[SpreadFrontend],
        *,
        give_up: float,
        warn: Callable[[str], None],
    ) -> None:
        self.names = list(names)
        self.queriers = [list(clients) for clients in queriers]
        self.frontends = list(frontends)
        self.give_up = give_up
        self.warn = warn
        self.connected = [False] * len(self.names)
        self.lost = 0  # requests lost with a replica's connection
        self.was_lost = False  # a replica has been lost since `start()`
        self._last_loss: BaseException | None = None
        self._last_try: BaseException | None = None  # why the last reconnect failed
        # While replica i is down: (when it is tried next, the wait before that try).
        self._next_try: list[tuple[float, float] | None] = [None] * len(self.names)
        self._none_since = 0.0
        self._none_connected = asyncio.Event()
        self._some_connected = asyncio.Event()
        self._keepers: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Connect to every replica; raises if one does not answer."""
        await asyncio.gather(*(self._connect(index) for index in range(len(self.names))))

    async def watch(self) -> None:
        """Reconnect lost replicas, forever; raises once none has been connected for long."""
        self._keepers = [asyncio.create_task(self._keep(index)) for index in range(len(self.names))]
        self._keepers.append(asyncio.create_task(self._deadline()))
        try:
            await asyncio.gather(*self._keepers)
        finally:
            await self._stop_keepers()

    def status(self) -> str:
        """For the report line: how many replicas are connected, which are not, what was lost."""
        down = [name for name, up in zip(self.names, self.connected, strict=True) if not up]
        return (
            f"replicas {len(self.names) - len(down)}/{len(self.names)} up"
            + (f" (down: {', '.join(down)})" if down else "")
            + f", lost {self.lost}"
        )

    def retrying(self) -> str:
        """For the report line while a replica is down: when it is tried next, and
        how long the load generator waits for one; empty while all are up."""
        now = time.monotonic()
        tries = [at for at in self._next_try if at is not None]
        if not tries:
            return ""
        at, delay = min(tries)
        line = (
            f"reconnecting: next try in {max(at - now, 0):.0f} s "
            f"(waits {delay:g} s, doubling to {RETRY_MAX:g} s)"
        )
        if not any(self.connected):
            left = max(self.give_up - (now - self._none_since), 0)
            line += f", stopping unless one is back within {left:.0f} s"
        waiting = sum(frontend.waiting for frontend in self.frontends)
        return line + f"; {waiting} requests waiting to be sent again"

    async def close(self) -> None:
        # Keepers first: they would take the sockets closing below for a lost replica.
        await self._stop_keepers()
        clients = [client for replica in self.queriers for client in replica]
        await asyncio.gather(*(client.close() for client in clients), return_exceptions=True)
        await asyncio.gather(*(f.close() for f in self.frontends), return_exceptions=True)

    async def _stop_keepers(self) -> None:
        for keeper in self._keepers:
            keeper.cancel()
        await asyncio.gather(*self._keepers, return_exceptions=True)

    async def _deadline(self) -> None:
        while True:
            await self._none_connected.wait()
            try:
                await asyncio.wait_for(self._some_connected.wait(), self.give_up)
            except TimeoutError:
                raise self._stop_reason() from None

    async def _keep(self, index: int) -> None:
        while True:
            why = self._last_loss = await self._first_closed(index)
            if why.rcvd is not None and why.rcvd.code in _TOKEN_REFUSED:
                raise why
            self.was_lost = True
            self._next_try[index] = (time.monotonic() + RETRY_FIRST, RETRY_FIRST)
            await self._disconnect(index)
            self._say_lost(index, why)
            await self._reconnect(index)
            self.warn(f"loadgen: replica {self.names[index]} is back")

    async def _reconnect(self, index: int) -> None:
        """Try replica `index` after RETRY_FIRST, doubling up to RETRY_MAX, until it answers."""
        delay = RETRY_FIRST
        while True:
            self._next_try[index] = (time.monotonic() + delay, delay)
            await asyncio.sleep(delay)
            try:
                await self._connect(index)
                return
            except _CONNECT_ERRORS as exc:
                self._last_try = exc
                await self._disconnect(index)
                delay = min(delay * 2, RETRY_MAX)

    async def _connect(self, index: int) -> None:
        await _every(client.start() for client in self.queriers[index])
        await _every(frontend.connect(index) for frontend in self.frontends)
        self._next_try[index] = None
        self._set_connected(index, True)

    async def _disconnect(self, index: int) -> None:
        self._set_connected(index, False)
        lost = await asyncio.gather(*(frontend.disconnect(index) for frontend in self.frontends))
        self.lost += sum(lost)
        await asyncio.gather(*(client.close(shutdown=False) for client in self.queriers[index]))

    async def _first_closed(self, index: int) -> websockets.ConnectionClosed:
        sockets = [client.ws for client in self.queriers[index]]
        sockets += [frontend.clients[index].ws for frontend in self.frontends]
        waits = [asyncio.create_task(wait_closed(ws)) for ws in sockets]
        try:
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        return next(iter(done)).result()

    def _say_lost(self, index: int, why: BaseException) -> None:
        up = sum(self.connected)
        line = (
            f"loadgen: lost replica {self.names[index]} ({why}); {up} of {len(self.names)} "
            f"still connected; reconnecting to it after {RETRY_FIRST:g} s, doubling to "
            f"{RETRY_MAX:g} s"
        )
        if not up:
            line += f"; stopping unless a replica is back within {self.give_up:g} s"
        self.warn(line)

    def _set_connected(self, index: int, up: bool) -> None:
        self.connected[index] = up
        if any(self.connected):
            self._none_connected.clear()
            self._some_connected.set()
        elif not self._none_connected.is_set():
            self._none_since = time.monotonic()
            self._some_connected.clear()
            self._none_connected.set()

    def _stop_reason(self) -> BaseException:
        who = "no replica" if len(self.names) > 1 else f"{self.names[0]} not"
        return NoReplicaReachable(
            f"{who} reachable for {time.monotonic() - self._none_since:.0f} s; "
            f"the last lost said: {self._last_loss}"
            + (f"; the last reconnect: {self._last_try}" if self._last_try is not None else "")
        )


async def _every(connects: Iterable[Awaitable[None]]) -> None:
    """Await them all, then raise the first failure: stopping at it would leave the
    others connecting, to be opened after `_disconnect` had closed them."""
    outcomes = await asyncio.gather(*connects, return_exceptions=True)
    failure = next((o for o in outcomes if isinstance(o, BaseException)), None)
    if failure is not None:
        raise failure
