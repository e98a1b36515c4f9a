"""Seeded chaos across protocols: websocket frontends, Cortex-style gRPC queriers.

`tests/api/wire/chaos.py` drives the websocket frontends and checks the
outcome; here the queriers are gRPC worker streams on the process's own
door (`QuerierLoop`), each request bridged (`api.wire.grpc.bridge`). A
querier's workers answer as Cortex's do (the result to the frontend's
`QueryResult`, then "done" on the stream), one sends its result and breaks
its stream before "done", a querier's streams break with requests running,
or a result comes for a query id nobody sent. Messages cross real sockets,
so a run's order depends on timing as well as on its seed; the checks hold
for every order.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from api.store.services import api_token_issue
from api.wire import runtime_host
from api.wire.grpc.clients import QuerierWorker
from loadgen.daphne_process import free_port
from scheduler_core.model import Request
from scheduler_core.pb import frontendv2pb_pb2, httpgrpc_pb2
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.api.wire.chaos import SEND_HEADER, ChaosRun

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


def send_of(msg: pb.SchedulerToQuerier) -> str:
    for header in msg.httpRequest.headers:
        if header.key == SEND_HEADER:
            return str(header.values[0])
    raise AssertionError(f"query {msg.queryID} carries no {SEND_HEADER}")


class GrpcQueriers(ChaosRun):
    waiting_follows_at_once = False

    def __init__(self, seed: int, tokens: dict[str, str], host: Any) -> None:
        super().__init__(seed, tokens, host)
        self.door = host.grpc_door
        self.channel = self.door_channel()
        self.queriers: list[Querier] = []

    def door_channel(self) -> grpc.aio.Channel:
        return grpc.aio.insecure_channel(f"127.0.0.1:{self.door.port}")

    def answered_elsewhere(self, request: Request) -> bool:
        # Answered through the bridge; the runtime lets go at the worker's "done".
        return bool(self.door.foreign.answered(request.id))

    def live_queriers(self) -> list[Querier]:
        return [q for q in self.queriers if q.open]

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
        await super().step()

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
                    worker.running = (msg, send)

    async def send_result(self, worker: Worker) -> None:
        assert worker.running is not None
        (msg, send), worker.running = worker.running, None
        await worker.client.stub_for(msg).QueryResult(
            frontendv2pb_pb2.QueryResultRequest(
                queryID=msg.queryID,
                httpResponse=httpgrpc_pb2.HTTPResponse(Code=200, body=b'"ok"'),
            ),
            metadata=(("x-scope-orgid", msg.userID),),
        )
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

    async def close_querier(self) -> None:
        if self.live_queriers():
            q = self.rng.choice(self.live_queriers())
            running = sorted(w.running[1] for w in q.workers if w.running)
            self.log.append(f"{q.name} breaks its streams with sends {running} running")
            await self.close(q)

    async def hostile_querier(self) -> None:
        """A result for a query id the scheduler never sent: dropped, nothing changes."""
        if not self.live_queriers():
            return
        worker = self.rng.choice(self.live_queriers()).workers[0]
        ours = pb.SchedulerToQuerier(frontendAddress=self.door.foreign.own_address)
        await worker.client.stub_for(ours).QueryResult(
            frontendv2pb_pb2.QueryResultRequest(
                queryID=10**9, httpResponse=httpgrpc_pb2.HTTPResponse(Code=200)
            ),
            metadata=(("x-scope-orgid", "t1"),),
        )
        self.log.append("a result comes for a query id nobody sent")

    async def shutdown_querier(self) -> None:
        if self.live_queriers():
            q = self.rng.choice(self.live_queriers())
            await q.workers[0].client.notify_shutdown()
            self.leaving.add(q.name)
            self.log.append(f"{q.name} says it is shutting down")

    def is_busy(self, querier: Querier) -> bool:
        return any(w.running for w in querier.workers)

    async def finish_by_answering(self) -> None:
        """A fresh querier joins, and every query handed out is answered until none is left."""
        await self.open_querier(workers=3)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_SECONDS
        while loop.time() < deadline:
            await asyncio.sleep(0.005)  # real sockets: the messages take real time
            self.read_all()
            busy = [w for q in self.live_queriers() for w in q.workers if w.running]
            if not busy and self.settled() and not self.unended():
                return
            for worker in busy:
                await self.send_result(worker)
                await self.done(worker)
            await self.revive()
            await self.leave()
        raise AssertionError(f"not settled after {SETTLE_SECONDS:.0f}s; {self.log[-20:]}")

    def unended(self) -> list[int]:
        return [i for f in self.live_frontends() for i in f.unfinished()]

    async def close_all(self) -> None:
        await self.close_frontends()
        for q in self.live_queriers():
            await self.close(q)
        await self.channel.close()


@pytest.mark.parametrize("seed", SEEDS)
async def test_every_acknowledged_request_ends_exactly_once_across_protocols(
    grpc_host: Any, tokens: dict[str, str], seed: int
) -> None:
    run = GrpcQueriers(seed, tokens, grpc_host)
    run.verify(await run.play(STEPS))
    await run.close_all()
