"""Seeded chaos across protocols: websocket frontends, Cortex-style gRPC queriers.

`tests/api/wire/chaos.py` drives the websocket frontends and checks the
outcome; here the queriers are gRPC worker streams on the process's own
door (`QuerierLoop`), each request bridged (`api.wire.grpc.bridge`). A
querier's workers answer as Cortex's do (the result to the frontend's
`QueryResult`, then "done" on the stream), one sends its result and breaks
its stream before "done", a querier's streams break with requests running,
or a result comes for a query id nobody sent. Cortex query-frontends
(FrontendLoop streams with their own QueryResult servers) enqueue, cancel
and break their streams beside the websocket frontends: each query they
still wait for is answered, none is handed to queriers more than twice
(docs/protocol-grpc.md says when twice), and a broken stream's queries
leave the queue. Messages cross real sockets,
so a run's order depends on timing as well as on its seed; the checks hold
for every order.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from api.store.services import api_token_issue
from api.wire import runtime_host
from api.wire.grpc.clients import (
    CortexFrontend,
    FrontendLoop,
    QuerierWorker,
    ReceivedResult,
    get_request,
)
from loadgen.daphne_process import free_port
from scheduler_core.model import Request
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.api.wire.chaos import QUERIES, SEND_HEADER, ChaosRun
from tests.api.wire.chaos_operator import TENANTS

pytestmark = pytest.mark.django_db(transaction=True)

SEEDS = range(int(os.environ.get("CHAOS_SEEDS", "12")))
STEPS = 150
SETTLE_SECONDS = 30.0


@pytest.fixture
def tokens(transactional_db: None) -> dict[str, str]:
    return {"frontend": api_token_issue(name="frontend", role="frontend")[1]}


@pytest.fixture
async def grpc_host(settings: Any, transactional_db: None) -> Any:
    """The process's runtime host with its gRPC door on a free port."""
    settings.GRPC_PORT = free_port()
    started = await runtime_host.ensure_started()
    assert started.grpc_door is not None
    yield started
    await runtime_host.shutdown(drain_timeout=0)


@dataclass
class Worker:
    client: QuerierWorker
    inbox: asyncio.Queue[pb.SchedulerToQuerier] = field(default_factory=asyncio.Queue)
    reader: asyncio.Task[None] | None = None
    running: tuple[pb.SchedulerToQuerier, str] | None = None  # and its SEND_HEADER

    async def read(self) -> None:
        with contextlib.suppress(Exception):  # the stream broke or ended
            while True:
                self.inbox.put_nowait(await self.client.next(timeout=None))

    def start(self) -> Worker:
        self.reader = asyncio.get_running_loop().create_task(self.read())
        return self

    def ended(self) -> bool:
        return self.reader is not None and self.reader.done() and self.inbox.empty()


@dataclass
class Querier:
    name: str
    workers: list[Worker]
    open: bool = True


def send_of(msg: pb.SchedulerToQuerier) -> str | None:
    """The websocket enqueue a query came from; None for a Cortex frontend's."""
    for header in msg.httpRequest.headers:
        if header.key == SEND_HEADER:
            return str(header.values[0])
    return None


@dataclass
class CortexSide:
    """A Cortex query-frontend: its QueryResult server and one FrontendLoop stream."""

    frontend: CortexFrontend
    loop: FrontendLoop
    open: bool = True
    enqueued: set[int] = field(default_factory=set)  # answered OK
    cancelled: set[int] = field(default_factory=set)
    results: Counter[int] = field(default_factory=Counter)

    def unanswered(self) -> list[int]:
        return sorted(q for q in self.enqueued - self.cancelled if not self.results[q])


class GrpcQueriers(ChaosRun):
    waiting_follows_at_once = False

    def __init__(self, seed: int, tokens: dict[str, str], host: Any) -> None:
        super().__init__(seed, tokens, host)
        self.door = host.grpc_door
        self.channel = self.door_channel()
        self.cortex: list[CortexSide] = []
        self.query_ids = 0
        self.cortex_handouts: Counter[int] = Counter()  # by query id

    def door_channel(self) -> grpc.aio.Channel:
        return grpc.aio.insecure_channel(f"127.0.0.1:{self.door.port}")

    def answered_elsewhere(self, request: Request) -> bool:
        # Answered through the bridge; the runtime lets go at the worker's "done".
        return bool(self.door.foreign.answered(request.id))

    async def open_querier(self, workers: int | None = None) -> None:
        name = f"q{len(self.queriers)}"
        count = workers or self.rng.randint(1, 3)
        opened = []
        for _ in range(count):
            opened.append(Worker(await QuerierWorker(self.channel, name).open()).start())
        self.queriers.append(Querier(name, opened))
        self.log.append(f"{name} opens with {count} worker streams")

    async def step(self) -> None:
        await self.revive()
        roll = self.rng.random()
        if roll < 0.12:
            await self.cortex_enqueue()
        elif roll < 0.15:
            await self.cortex_cancel()
        elif roll < 0.16:
            self.cortex_break()
        await super().step()

    # -- Cortex frontends ------------------------------------------------------------

    async def cortex_side(self) -> CortexSide:
        live = [c for c in self.cortex if c.open]
        if live and (len(live) > 1 or self.rng.random() < 0.95):
            return self.rng.choice(live)
        frontend = await CortexFrontend(f"127.0.0.1:{self.door.port}").start()
        side = CortexSide(frontend, await frontend.open_loop())

        def count(result: ReceivedResult) -> None:
            side.results[result.query_id] += 1

        frontend.on_result = count
        self.cortex.append(side)
        self.log.append(f"Cortex frontend {len(self.cortex) - 1} opens")
        return side

    async def cortex_enqueue(self) -> None:
        side = await self.cortex_side()
        self.query_ids += 1
        tenant = self.rng.choice(TENANTS)
        query = [("query", self.rng.choice(QUERIES)), ("time", "1700000000")]
        status = await side.loop.enqueue(
            self.query_ids, tenant, get_request("/prometheus/api/v1/query", query)
        )
        if status == pb.OK:
            side.enqueued.add(self.query_ids)
        self.log.append(f"Cortex frontend enqueues query {self.query_ids}: {status}")

    async def cortex_cancel(self) -> None:
        candidates = [(c, q) for c in self.cortex if c.open for q in c.unanswered()]
        if candidates:
            side, query_id = self.rng.choice(candidates)
            side.cancelled.add(query_id)
            await side.loop.cancel(query_id)
            self.log.append(f"Cortex frontend cancels query {query_id}")

    def cortex_break(self) -> None:
        live = [c for c in self.cortex if c.open]
        if live:
            side = self.rng.choice(live)
            side.open = False
            side.loop.call.cancel()
            self.log.append(f"a Cortex frontend's stream breaks with {side.unanswered()} out")

    async def settle_cortex(self) -> None:
        """Every query a Cortex frontend still waits for gets its answer, within a bound."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_SECONDS
        while any(c.unanswered() for c in self.cortex if c.open):
            assert loop.time() < deadline, f"Cortex queries unanswered; {self.log[-20:]}"
            await asyncio.sleep(0.005)
            self.read_all()
            for worker in [w for q in self.live_queriers() for w in q.workers if w.running]:
                await self.send_result(worker)
                await self.done(worker)
        # A query is handed to queriers at most twice: once more if its
        # querier left between its result and its "done" (docs/protocol-grpc.md),
        # or left while running it. (Its frontend may get more than one answer
        # then, and takes the first, as Cortex's does.)
        thrice = sorted(q for q, n in self.cortex_handouts.items() if n > 2)
        assert not thrice, f"Cortex queries handed out more than twice: {thrice}"
        for side in self.cortex:
            assert set(side.results) <= side.enqueued, "a result for a query never enqueued"

    async def revive(self) -> None:
        """A stream the scheduler ended (its query was cancelled) is opened again, as Cortex's."""
        for q in self.live_queriers():
            for n, worker in enumerate(q.workers):
                if worker.ended():
                    await worker.client.close()
                    client = await QuerierWorker(self.channel, q.name).open()
                    q.workers[n] = Worker(client).start()
                    self.log.append(f"{q.name} opens a stream again")

    def read_queriers(self) -> None:
        for q in self.live_queriers():
            for worker in q.workers:
                while not worker.inbox.empty():
                    msg = worker.inbox.get_nowait()
                    assert worker.running is None, f"{q.name}: a second query on one stream"
                    send = send_of(msg)
                    self.handed(send)
                    if send is None:
                        self.cortex_handouts[msg.queryID] += 1
                    worker.running = (msg, send)

    async def send_result(self, worker: Worker) -> None:
        assert worker.running is not None
        (msg, send), worker.running = worker.running, None
        await worker.client.send_result(msg, body=b'"ok"')
        self.answered.add(send)

    async def answer(self, *, then_close: bool = False) -> None:
        busy = [(q, w) for q in self.live_queriers() for w in q.workers if w.running]
        if not busy:
            return
        q, worker = self.rng.choice(busy)
        assert worker.running is not None
        what = f"{q.name} answers send {worker.running[1]}"
        self.log.append(what + " and breaks its streams before done" * then_close)
        await self.send_result(worker)
        if then_close:
            await self.close(q)
        else:
            await self.done(worker)

    async def done(self, worker: Worker) -> None:
        # The scheduler may have ended the stream meanwhile (a cancel): revived later.
        with contextlib.suppress(asyncio.InvalidStateError, grpc.aio.AioRpcError):
            await worker.client.done()

    async def close(self, q: Querier) -> None:
        q.open = False
        for worker in q.workers:
            await worker.client.close()
            if worker.reader is not None:
                worker.reader.cancel()

    def running_of(self, querier: Querier) -> list[str]:
        return sorted(f"query {w.running[0].queryID}" for w in querier.workers if w.running)

    async def hostile_querier(self) -> None:
        """A result for a query id the scheduler never sent: dropped, nothing changes."""
        if not self.live_queriers():
            return
        worker = self.rng.choice(self.live_queriers()).workers[0]
        nobodys = pb.SchedulerToQuerier(
            queryID=10**9, frontendAddress=self.door.foreign.own_address, userID="t1"
        )
        await worker.client.send_result(nobodys)
        self.log.append("a result comes for a query id nobody sent")

    async def announce_shutdown(self, querier: Querier) -> None:
        await querier.workers[0].client.notify_shutdown()

    async def forgotten_when_gone(self) -> None:
        """A Cortex frontend whose stream broke has nothing left queued or running."""
        gone = {c.frontend.address for c in self.cortex if not c.open}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_SECONDS
        while True:
            queue = self.runtime.queue
            held = [*queue.listing().queued(), *queue.in_flight_requests()]
            left = [r.id for r in held if getattr(r.payload, "frontend_address", None) in gone]
            if not left:
                return
            assert loop.time() < deadline, f"{left} still held for gone Cortex frontends"
            await asyncio.sleep(0.005)

    async def finish_by_answering(self) -> None:
        """A fresh querier joins, and every query handed out is answered until none is left."""
        await self.forgotten_when_gone()
        await self.open_querier(workers=3)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_SECONDS
        while loop.time() < deadline:
            await asyncio.sleep(0.005)  # real sockets: the messages take real time
            self.read_all()
            busy = [w for q in self.live_queriers() for w in q.workers if w.running]
            if not busy and self.settled() and not self.unended() and not self.cortex_waiting():
                return
            for worker in busy:
                await self.send_result(worker)
                await self.done(worker)
            await self.revive()
            await self.leave()
        raise AssertionError(f"not settled after {SETTLE_SECONDS:.0f}s; {self.log[-20:]}")

    def cortex_waiting(self) -> bool:
        return any(c.unanswered() for c in self.cortex if c.open)

    def unended(self) -> list[int]:
        return [i for f in self.live_frontends() for i in f.unfinished()]

    async def close_all(self) -> None:
        await self.close_frontends()
        for q in self.live_queriers():
            await self.close(q)
        await self.channel.close()
        for side in self.cortex:
            side.loop.call.cancel()
            await side.frontend.close()


@pytest.mark.parametrize("seed", SEEDS)
async def test_every_acknowledged_request_ends_exactly_once_across_protocols(
    grpc_host: Any, tokens: dict[str, str], seed: int
) -> None:
    run = GrpcQueriers(seed, tokens, grpc_host)
    ending = await run.play(STEPS)
    await run.settle_cortex()
    run.verify(ending)
    await run.close_all()
