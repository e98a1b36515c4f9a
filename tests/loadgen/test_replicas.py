"""The load generator's replicas watched over: a lost one passed over, reconnected, given up on.

Stand-in replicas speaking just enough of docs/protocol.md, in this
process, so a replica can die (its sockets aborted, no close frame, as after
`kill -9`) and come back on the same port within a second. A lone replica
is reconnected too, and gets again what its graceful shutdown never
accepted. The Daphne runs of `manage.py loadgen` are in test_loadgen_command.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
import websockets
from websockets.asyncio.server import Server, ServerConnection, serve

from loadgen import replicas as replicas_module
from loadgen.daphne_process import free_port
from loadgen.replicas import NoReplicaReachable, Replicas
from loadgen.spread_frontend import SpreadFrontend
from loadgen.wsclients import QuerierClient
from tests.polling import until


class StandIn:
    """A replica that welcomes queriers and answers, or only enqueues, frontends' requests.

    `acks=False`: it reads enqueues and says nothing, as a replica that has
    begun closing does; `refuses`: it rejects every enqueue with that status.
    """

    def __init__(self, *, answers: bool, acks: bool = True, refuses: int | None = None) -> None:
        self.answers = answers
        self.acks = acks
        self.refuses = refuses
        self.port = free_port()
        self.url = f"ws://127.0.0.1:{self.port}"
        self.received: list[Any] = []
        self.server: Server | None = None
        self._held: dict[ServerConnection, list[Any]] = {}

    async def start(self) -> StandIn:
        self.server = await serve(self._serve, "127.0.0.1", self.port)
        return self

    async def kill(self) -> None:
        """As `kill -9`: every socket dropped without a close frame, nothing listening."""
        assert self.server is not None
        for connection in self.server.connections:
            connection.transport.abort()
        self.server.close()
        await self.server.wait_closed()

    async def shut_down(self) -> None:
        """As a graceful SIGTERM, in its worst order: the querier sockets close
        first (code 1000); then each frontend gets `failed` for every request
        it accepted and had not answered, and its own close."""
        assert self.server is not None
        self.server.close(close_connections=False)
        frontends = set(self._held)
        queriers = [c for c in self.server.connections if c not in frontends]
        await asyncio.gather(*(c.close(1000) for c in queriers))
        await asyncio.sleep(0.3)
        for connection, held in self._held.items():
            for rid in held:
                await connection.send(json.dumps({"type": "failed", "id": rid}))
            await connection.close(1000)
        await self.server.wait_closed()

    async def close_all(self, code: int) -> None:
        """Close every socket with `code`, as the scheduler does a revoked token's (4001)."""
        assert self.server is not None
        await asyncio.gather(*(c.close(code) for c in self.server.connections))

    async def _serve(self, ws: ServerConnection) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in ws:
                msg = json.loads(raw)
                if msg["type"] == "hello":
                    await ws.send(json.dumps({"type": "welcome", "workers": [1]}))
                elif msg["type"] == "enqueue":
                    await self._enqueue(ws, msg["id"])

    async def _enqueue(self, ws: ServerConnection, rid: Any) -> None:
        self.received.append(rid)
        held = self._held.setdefault(ws, [])
        if self.refuses is not None:
            await ws.send(json.dumps({"type": "rejected", "id": rid, "status": self.refuses}))
        elif self.answers:
            await ws.send(json.dumps({"type": "enqueued", "id": rid}))
            await ws.send(json.dumps({"type": "result", "id": rid}))
        elif self.acks:
            held.append(rid)
            await ws.send(json.dumps({"type": "enqueued", "id": rid}))


class Generator:
    """`manage.py loadgen`'s websocket side over the stand-ins: one frontend, one querier."""

    def __init__(self, stand_ins: list[StandIn], *, home: int, give_up: float = 30.0) -> None:
        self.replies: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.frontend = SpreadFrontend(
            [f"{s.url}/ws/frontend/" for s in stand_ins], "token", self.replies.append, home=home
        )
        self.replicas = Replicas(
            [s.url for s in stand_ins],
            [[QuerierClient(f"{s.url}/ws/querier/", "token", "q-1")] for s in stand_ins],
            [self.frontend],
            give_up=give_up,
            warn=self.warnings.append,
        )
        self.watch: asyncio.Task[None] | None = None

    async def start(self) -> Generator:
        await self.replicas.start()
        self.watch = asyncio.create_task(self.replicas.watch())
        return self

    async def send(self, *ids: str) -> None:
        for rid in ids:
            assert await self.frontend.send({"type": "enqueue", "id": rid, "tenant": "t"})

    def said(self, text: str) -> bool:
        return any(text in line for line in self.warnings)

    def results(self) -> list[Any]:
        return self.replied("result")

    def replied(self, kind: str) -> list[Any]:
        return [reply["id"] for reply in self.replies if reply["type"] == kind]

    async def close(self) -> None:
        if self.watch is not None:
            self.watch.cancel()
        await self.replicas.close()


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replicas_module, "RETRY_FIRST", 0.05)
    monkeypatch.setattr(replicas_module, "RETRY_MAX", 0.2)


@pytest.fixture
async def pair() -> AsyncIterator[tuple[StandIn, StandIn]]:
    a, b = StandIn(answers=True), StandIn(answers=False)
    await a.start()
    await b.start()
    yield a, b
    for stand_in in (a, b):
        assert stand_in.server is not None
        stand_in.server.close()


async def test_a_lost_replica_loses_its_waiting_requests_and_gets_new_ones_once_it_is_back(
    pair: tuple[StandIn, StandIn],
) -> None:
    a, b = pair
    generator = await Generator([a, b], home=1).start()
    try:
        await generator.send("held-1", "held-2", "held-3")
        await until(lambda: b.received == ["held-1", "held-2", "held-3"])

        await b.kill()
        await until(lambda: generator.said(f"lost replica {b.url}"))

        assert generator.replicas.lost == 3
        assert generator.replicas.status() == f"replicas 1/2 up (down: {b.url}), lost 3"
        await generator.send("while-down")
        await until(lambda: generator.results() == ["while-down"])
        assert a.received == ["while-down"]

        await b.start()
        await until(lambda: generator.said(f"replica {b.url} is back"))
        await generator.send("after")
        await until(lambda: b.received[3:] == ["after"])
        assert generator.results() == ["while-down"]
        assert generator.replicas.status() == "replicas 2/2 up, lost 3"
        assert generator.watch is not None and not generator.watch.done()
    finally:
        await generator.close()


async def test_every_replica_lost_for_the_grace_period_stops_the_watch_with_the_last_reason(
    pair: tuple[StandIn, StandIn],
) -> None:
    a, b = pair
    generator = await Generator([a, b], home=0, give_up=0.3).start()
    try:
        await a.kill()
        await b.kill()
        assert generator.watch is not None
        with pytest.raises(NoReplicaReachable, match="no close frame received or sent"):
            await asyncio.wait_for(generator.watch, 5)

        assert generator.said("0 of 2 still connected")
        assert generator.said("stopping unless a replica is back within 0.3 s")
        assert not await generator.frontend.send({"type": "enqueue", "id": "x", "tenant": "t"})
    finally:
        await generator.close()


@contextlib.asynccontextmanager
async def lone(alone: StandIn, give_up: float = 30.0) -> AsyncIterator[Generator]:
    """`alone` started as the generator's only replica; both closed after."""
    await alone.start()
    generator = await Generator([alone], home=0, give_up=give_up).start()
    try:
        yield generator
    finally:
        await generator.close()
        assert alone.server is not None
        alone.server.close()


async def test_a_lone_replica_killed_loses_what_it_held_and_is_reconnected_when_back() -> None:
    alone = StandIn(answers=False)
    async with lone(alone) as generator:
        await generator.send("held-1", "held-2")
        await until(lambda: alone.received == ["held-1", "held-2"])

        await alone.kill()
        await until(lambda: generator.said(f"lost replica {alone.url}"))

        assert generator.replicas.status() == f"replicas 0/1 up (down: {alone.url}), lost 2"
        assert re.fullmatch(
            r"reconnecting: next try in \d+ s \(waits [\d.]+ s, doubling to 0.2 s\), "
            r"stopping unless one is back within \d+ s; 0 requests waiting to be sent again",
            generator.replicas.retrying(),
        )
        assert not await generator.frontend.send({"type": "enqueue", "id": "x", "tenant": "t"})
        alone.answers = True
        await alone.start()
        await until(lambda: generator.said(f"replica {alone.url} is back"))
        await generator.send("after")
        await until(lambda: generator.results() == ["after"])
        assert generator.replicas.status() == "replicas 1/1 up, lost 2"
        assert generator.replicas.retrying() == ""
        assert generator.watch is not None and not generator.watch.done()


async def test_a_lone_replica_shut_down_gets_what_it_never_accepted_again_once_it_is_back() -> None:
    alone = StandIn(answers=False, acks=False)
    async with lone(alone) as generator:
        await generator.send("unheard")
        await until(lambda: alone.received == ["unheard"])

        await alone.shut_down()  # code 1000: it promised nothing for "unheard"
        await until(lambda: generator.said(f"lost replica {alone.url}"))
        assert generator.frontend.waiting == 1
        assert generator.replicas.retrying().endswith("; 1 requests waiting to be sent again")

        alone.answers = True
        await alone.start()
        await until(lambda: generator.results() == ["unheard"])
        assert alone.received == ["unheard", "unheard"]
        assert generator.replied("failed") == generator.replied("rejected") == []
        assert generator.replicas.lost == 0
        assert generator.frontend.waiting == 0


async def test_a_lone_replica_refusing_as_shutting_down_gets_the_request_again_once_back() -> None:
    alone = StandIn(answers=False, refuses=503)
    async with lone(alone) as generator:
        await generator.send("refused")
        await until(lambda: generator.frontend.waiting == 1)
        assert generator.replies == []

        await alone.shut_down()
        alone.refuses, alone.answers = None, True
        await alone.start()

        await until(lambda: generator.results() == ["refused"])
        assert alone.received == ["refused", "refused"]
        assert generator.replied("rejected") == []
        assert generator.replicas.lost == 0


async def test_a_lone_replica_not_back_within_the_grace_period_stops_the_watch_naming_it() -> None:
    alone = StandIn(answers=True)
    async with lone(alone, give_up=0.5) as generator:
        await alone.kill()
        assert generator.watch is not None
        with pytest.raises(NoReplicaReachable) as stopped:
            await asyncio.wait_for(generator.watch, 5)
        assert str(stopped.value).startswith(f"{alone.url} not reachable for ")
        assert "; the last lost said: no close frame received or sent" in str(stopped.value)
        assert "; the last reconnect: [Errno 111] Connect call failed" in str(stopped.value)
        assert generator.said("stopping unless a replica is back within 0.5 s")


@pytest.mark.parametrize("code", [4001, 4003])
async def test_a_socket_closed_for_its_token_stops_the_watch_at_once_without_reconnecting(
    pair: tuple[StandIn, StandIn], code: int
) -> None:
    a, b = pair
    generator = await Generator([a, b], home=0).start()
    try:
        await b.close_all(code)
        assert generator.watch is not None
        with pytest.raises(websockets.ConnectionClosed, match=f"received {code}"):
            await asyncio.wait_for(generator.watch, 5)
        assert generator.warnings == []
    finally:
        await generator.close()


async def test_a_drain_s_failed_replies_count_even_when_a_querier_socket_closes_first(
    pair: tuple[StandIn, StandIn],
) -> None:
    a, b = pair
    generator = await Generator([a, b], home=1).start()
    try:
        await generator.send("held-1", "held-2")
        await until(lambda: b.received == ["held-1", "held-2"])

        await b.shut_down()
        await until(lambda: generator.said(f"lost replica {b.url}"))

        await until(lambda: generator.replied("failed") == ["held-1", "held-2"])
        assert generator.replicas.lost == 0
    finally:
        await generator.close()


@contextlib.asynccontextmanager
async def sending_to(b: StandIn) -> AsyncIterator[tuple[StandIn, Generator]]:
    """Replica `b` (the frontend's home) beside an answering one; both closed after."""
    a = await StandIn(answers=True).start()
    await b.start()
    generator = await Generator([a, b], home=1).start()
    try:
        yield a, generator
    finally:
        await generator.close()
        for stand_in in (a, b):
            assert stand_in.server is not None
            stand_in.server.close()


async def test_a_request_a_replica_shutting_down_never_accepted_goes_to_another_replica() -> None:
    b = StandIn(answers=False, acks=False)
    async with sending_to(b) as (a, generator):
        await generator.send("unheard")
        await until(lambda: b.received == ["unheard"])

        await b.shut_down()

        await until(lambda: generator.results() == ["unheard"])
        assert a.received == ["unheard"]
        assert generator.replicas.lost == 0
        assert generator.frontend.retried == 1


async def test_a_request_a_killed_replica_never_acknowledged_is_lost_not_sent_twice() -> None:
    b = StandIn(answers=False, acks=False)
    async with sending_to(b) as (a, generator):
        await generator.send("unheard")
        await until(lambda: b.received == ["unheard"])

        await b.kill()  # it may have queued the request: resending could run it twice

        await until(lambda: generator.replicas.lost == 1)
        assert a.received == []
        assert generator.replies == []


async def test_a_request_refused_as_shutting_down_is_sent_once_to_the_next_replica() -> None:
    b = StandIn(answers=False, refuses=503)
    async with sending_to(b) as (a, generator):
        await generator.send("refused")

        await until(lambda: generator.results() == ["refused"])
        assert b.received == a.received == ["refused"]
        assert generator.replied("rejected") == []
        assert generator.frontend.retried == 1
