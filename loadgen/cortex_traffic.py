"""The Cortex half of `manage.py loadgen`: a query-frontend and a querier over gRPC.

`GrpcDemo` sends part of the demo mix (loadgen.demo_traffic) the way a Cortex
query-frontend does: forwarded HTTP requests over `schedulerpb`, results
back through its own `QueryResult` server. It also runs one Cortex querier
process, so the inspector shows both protocols, and requests crossing
between them, side by side. With TLS it plays a frontend and querier of the
scheduler's own cluster (`api.wire.grpc.tls.PeerTls`, from the scheduler's
settings).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import grpc
from django.conf import settings

from api.wire.grpc.admission import classify_forwarded, forwarded_query
from api.wire.grpc.clients import (
    CortexFrontend,
    FrontendLoop,
    QuerierWorker,
    get_request,
    post_request,
)
from api.wire.grpc.tls import ClientTls, PeerTls, TlsSettingError, dial
from scheduler_core.model import QueueConfig
from scheduler_core.pb import httpgrpc_pb2
from scheduler_core.pb import schedulerpb_pb2 as pb
from scheduler_core.pb.schedulerpb_pb2_grpc import SchedulerForFrontendStub

__all__ = ["GrpcDemo", "GrpcUnavailable", "component_of", "forwarded_request"]

# Cortex's default `-http.prefix`: the paths a real query-frontend forwards.
PROMETHEUS_PREFIX = "/prometheus/api/v1/"
ANSWER = b'{"status":"success","data":{"resultType":"matrix","result":[]}}'
_STREAM_ERRORS = (grpc.aio.AioRpcError, EOFError, TimeoutError, asyncio.InvalidStateError)
# A query with no result this long after it was sent is given up: counted
# "timed out" and cancelled at its scheduler, as a Cortex query-frontend
# cancels a query whose HTTP client went away.
RESULT_TIMEOUT = 300.0
# How long a query enqueued on a frontend loop that broke may still be
# answered. The scheduler drops the loop's queued queries (as Cortex's does),
# but a querier already running one answers the frontend directly, so it is
# lost only once a querier's latency has passed with no result.
ORPHAN_GRACE = 30.0
# How often queries past their deadline are given up, and how long the
# CANCEL of one may take.
GIVE_UP_PERIOD = 0.5
CANCEL_TIMEOUT = 10.0


class _Waiting(NamedTuple):
    """A query sent and not answered yet."""

    due: float  # when it is given up without a result
    address: str  # the scheduler it went to
    orphaned: bool  # its loop broke: lost at `due`, not timed out


class GrpcUnavailable(Exception):
    """No gRPC scheduler answers at an address the load generator was given."""


@dataclass
class _Query:
    """A demo message on its way to a scheduler: its query ID once first sent
    (0 before), and how many ENQUEUEs of it failed."""

    msg: dict[str, Any]
    query_id: int = 0
    tries: int = 0


def forwarded_request(msg: dict[str, Any], rng: random.Random) -> httpgrpc_pb2.HTTPRequest:
    """A demo `enqueue` message as a Cortex frontend forwards it: GET or POST, half each.

    Only PromQL parameters and headers go over, never a component or
    priority: the scheduler must compute those itself, as it does for Cortex.
    """
    if msg["api_type"] == "query":
        params = [("query", msg["query"]), ("time", _number(msg["start"]))]
    else:
        params = [
            ("query", msg["query"]),
            ("start", _number(msg["start"])),
            ("end", _number(msg["end"])),
            ("step", _number(msg["step"])),
        ]
    build = post_request if rng.random() < 0.5 else get_request
    return build(f"{PROMETHEUS_PREFIX}{msg['api_type']}", params, msg["headers"])


def component_of(request: httpgrpc_pb2.HTTPRequest) -> str:
    """What a querier would end up reading for this request, by Mimir's default windows."""
    now = time.time()
    return str(classify_forwarded(forwarded_query(request, now), now, QueueConfig()).component)


class GrpcDemo:
    """One Cortex frontend and one Cortex querier process against every address.

    Invariants: at most one ENQUEUE is in flight per FrontendLoop, because
    the scheduler answers a loop's messages in order and a reply carries no
    query ID; a query ID is in `_pending` before its ENQUEUE is written,
    because a fast querier's result may arrive before the loop's reply.
    Every query sent is counted once: as a result, a failure, a rejection,
    an error, timed out or lost. Timed out is a query still held on a live
    loop when `result_timeout` passed, and cancelled there; lost is one
    whose loop broke (the scheduler dropped it) with no result within the
    grace. A result for a query already counted either way is ignored.
    A query whose ENQUEUE a scheduler answered SHUTTING_DOWN, or whose loop
    broke, goes to another loop, as a Cortex query-frontend fails over to
    another scheduler; the loop reopens after a pause.
    """

    def __init__(
        self,
        addresses: Sequence[str],
        latency: Callable[[str], float],
        *,
        querier_id: str = "cortex-querier-1",
        workers: int = 4,
        loops: int = 2,
        seed: int = 1,
        tls: PeerTls | None = None,
        orphan_grace: float = ORPHAN_GRACE,
        result_timeout: float = RESULT_TIMEOUT,
    ) -> None:
        """`tls` None: PeerTls of the scheduler's settings, read at start."""
        if not addresses:
            raise ValueError("GrpcDemo needs at least one scheduler address")
        self.addresses = list(addresses)
        self.tls = tls
        self.querier_id = querier_id
        self.counts: Counter[str] = Counter()
        self.problem = ""
        self._latency = latency
        self._workers, self._loops = workers, loops
        self._rng = random.Random(seed)
        self._frontend: CortexFrontend | None = None
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._queue: asyncio.Queue[_Query] = asyncio.Queue()
        # Cortex's frontend tries a query its worker count plus one times, so
        # that at least two schedulers see it; its workers are our loops.
        self._retries = loops * len(addresses) + 1
        self._moving = 0  # queries in `_queue` again after a failed ENQUEUE
        self._orphan_grace = orphan_grace
        self._result_timeout = result_timeout
        # Query ID -> when it is given up without a result, the address it
        # went to, and whether its loop broke (lost) or not (timed out).
        self._pending: dict[int, _Waiting] = {}
        self._last_id = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._cancels: set[asyncio.Task[None]] = set()  # CANCELs of queries given up

    @property
    def running(self) -> bool:
        return bool(self._tasks)

    @property
    def outstanding(self) -> int:
        return len(self._pending) + self._queue.qsize()

    @property
    def unanswered(self) -> int:
        """Sent with no answer yet, and not (yet) given up (`_give_up_every`)."""
        return len(self._pending) + self._moving

    async def start(self, timeout: float = 10.0) -> GrpcDemo:
        """Connect the frontend loops and querier workers; raises GrpcUnavailable."""
        try:
            if self.tls is None:
                self.tls = _peer_tls()
            for address in self.addresses:
                self._channels[address] = await _ready_channel(address, timeout, self.tls.dial)
            self._frontend = await CortexFrontend(
                self.addresses[0], client_tls=self.tls.dial, server_tls=self.tls.serve
            ).start()
            self._frontend.on_result = self._on_result
            for address, channel in self._channels.items():
                for _ in range(self._loops):
                    loop = await _open_loop(channel, self._frontend.address)
                    self._spawn(self._send_on(address, channel, loop))
                for _ in range(self._workers):
                    self._spawn(self._work_on(address, channel))
            self._spawn(self._give_up_every(GIVE_UP_PERIOD))
        except BaseException:
            await self.close()
            raise
        return self

    def submit(self, msg: dict[str, Any]) -> bool:
        """Queue one demo message for the frontend; False when gRPC is not running."""
        if not self.running:
            return False
        self._queue.put_nowait(_Query(msg))
        return True

    def status(self) -> str:
        """The periodic report line."""
        c = self.counts
        line = (
            f"grpc: sent {c['sent']} results {c['results']} rejected {c['rejected']} "
            f"failed {c['failed']} errors {c['errors']} timed out {c['timed_out']} "
            f"lost {c['lost']}; "
            f"{self.querier_id} answered {c['answered']}"
        )
        if self.problem:
            line += f" (last problem: {self.problem})"
            self.problem = ""
        return line

    async def close(self) -> None:
        stopping = [*self._tasks, *self._cancels]
        for task in stopping:
            task.cancel()
        await asyncio.gather(*stopping, return_exceptions=True)
        self._tasks.clear()
        if self._frontend is not None:
            await self._frontend.close()
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()

    def _spawn(self, work: Any) -> None:
        self._tasks.append(asyncio.get_running_loop().create_task(work))

    def _on_result(self, result: Any) -> None:
        if self._pending.pop(result.query_id, None) is not None:
            self.counts["results" if result.code == 200 else "failed"] += 1

    def _orphan(self, address: str) -> None:
        """A frontend loop to `address` broke: what went there is lost unless answered soon.

        Every query sent to `address` counts, not only this loop's: a loop
        notices a dead scheduler only when it next enqueues.
        """
        due = time.monotonic() + self._orphan_grace
        for query_id, waiting in self._pending.items():
            if waiting.address == address:
                self._pending[query_id] = _Waiting(min(due, waiting.due), address, True)

    async def _send_on(self, address: str, channel: grpc.aio.Channel, loop: FrontendLoop) -> None:
        while True:
            query = await self._queue.get()
            if query.query_id:
                self._moving -= 1
            else:
                self._last_id += 1
                query.query_id = self._last_id
                self.counts["sent"] += 1
            due = time.monotonic() + self._result_timeout
            self._pending[query.query_id] = _Waiting(due, address, False)
            try:
                status = await loop.enqueue(
                    query.query_id, query.msg["tenant"], forwarded_request(query.msg, self._rng)
                )
            except _STREAM_ERRORS as exc:
                self._orphan(address)
                self._note(f"frontend loop to {address}", exc)
                self._fail_over(query)
                loop = await self._reopen(address, channel)
                continue
            if status == pb.SHUTTING_DOWN:
                self._note(f"frontend loop to {address}", RuntimeError("SHUTTING_DOWN"))
                self._fail_over(query)
                loop.call.cancel()  # as Cortex's frontend leaves the loop of a scheduler going away
                loop = await self._reopen(address, channel)
            elif status != pb.OK:
                self._pending.pop(query.query_id, None)
                self.counts[
                    "rejected" if status == pb.TOO_MANY_REQUESTS_PER_TENANT else "errors"
                ] += 1

    def _fail_over(self, query: _Query) -> None:
        """Its ENQUEUE failed: queue it again for another loop, as a Cortex frontend
        does, up to `_retries` times; then it is an error.

        A scheduler answering SHUTTING_DOWN never took the query; after a
        broken stream it may have, and a querier may answer it besides the
        retry: `_on_result` counts the first result only.
        """
        assert query.query_id
        if self._pending.pop(query.query_id, None) is None:
            return  # answered meanwhile
        query.tries += 1
        if query.tries > self._retries:
            self.counts["errors"] += 1
            return
        self._moving += 1
        self._queue.put_nowait(query)

    async def _give_up_every(self, period: float) -> None:
        """Count the queries past their deadline, and CANCEL those timed out."""
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            for query_id in [q for q, waiting in self._pending.items() if waiting.due < now]:
                waiting = self._pending.pop(query_id)
                if waiting.orphaned:
                    self.counts["lost"] += 1
                else:
                    self.counts["timed_out"] += 1
                    cancel = asyncio.create_task(self._cancel_on(waiting.address, query_id))
                    self._cancels.add(cancel)
                    cancel.add_done_callback(self._cancels.discard)

    async def _cancel_on(self, address: str, query_id: int) -> None:
        """CANCEL a query given up, on a loop of its own: the sending loops
        keep one ENQUEUE in flight each, and a cancel must not wait behind
        traffic that may have stopped. The frontend's other loops stay
        open, so closing this one cancels nothing else. Bounded in time: a
        scheduler that never answers holds no task for long."""
        assert self._frontend is not None
        try:
            async with asyncio.timeout(CANCEL_TIMEOUT):
                loop = await _open_loop(self._channels[address], self._frontend.address)
                try:
                    await loop.cancel(query_id)
                finally:
                    await loop.close()
        except (*_STREAM_ERRORS, RuntimeError) as exc:
            self._note(f"cancelling query {query_id} at {address}", exc)

    async def _reopen(self, address: str, channel: grpc.aio.Channel) -> FrontendLoop:
        assert self._frontend is not None
        delay = 0.5
        while True:
            await asyncio.sleep(delay)
            try:
                return await _open_loop(channel, self._frontend.address)
            except (*_STREAM_ERRORS, RuntimeError) as exc:
                self._note(f"reopening the frontend loop to {address}", exc)
                delay = min(delay * 2, 5.0)

    async def _work_on(self, address: str, channel: grpc.aio.Channel) -> None:
        """One worker stream, reopened after the scheduler ends it (a cancel does)."""
        delay = 0.5
        while True:
            worker = QuerierWorker(
                channel, self.querier_id, client_tls=self.tls.dial if self.tls else None
            )
            try:
                await worker.open()
                while True:
                    msg = await worker.next(timeout=None)
                    delay = 0.5
                    await asyncio.sleep(self._latency(component_of(msg.httpRequest)))
                    await self._answer(worker, msg)
            except _STREAM_ERRORS as exc:
                if not _cancelled(exc):
                    self._note(f"querier stream to {address}", exc)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 5.0)
            finally:
                await worker.close()

    async def _answer(self, worker: QuerierWorker, msg: pb.SchedulerToQuerier) -> None:
        try:
            await worker.answer(msg, body=ANSWER)
        except grpc.aio.AioRpcError as exc:
            # As a Cortex querier does: the frontend is gone, the worker is not.
            self._note(f"QueryResult to {msg.frontendAddress}", exc)
            await worker.done()
        self.counts["answered"] += 1

    def _note(self, where: str, exc: BaseException) -> None:
        """The last problem, for the report line. Not a count: `errors` counts queries,
        and a stream retried every few seconds would otherwise outnumber them."""
        detail = exc.details() if isinstance(exc, grpc.aio.AioRpcError) else str(exc)
        self.problem = f"{where}: {type(exc).__name__} {detail or ''}".strip()


async def _ready_channel(address: str, timeout: float, tls: ClientTls | None) -> grpc.aio.Channel:
    if address.rsplit(":", 1)[-1] == "0":
        raise GrpcUnavailable(f"{address}: port 0 means the server's gRPC is off (GRPC_PORT=0)")
    channel = dial(address, tls)
    try:
        await asyncio.wait_for(channel.channel_ready(), timeout)
    except TimeoutError:
        await channel.close()
        how = "plaintext" if tls is None else "TLS (GRPC_CLIENT_TLS_*)"
        raise GrpcUnavailable(
            f"nothing answers gRPC over {how} at {address} within {timeout:g}s"
        ) from None
    return channel


async def _open_loop(channel: grpc.aio.Channel, frontend_address: str) -> FrontendLoop:
    loop = FrontendLoop(SchedulerForFrontendStub(channel).FrontendLoop())
    reply = await loop.send(pb.FrontendToScheduler(type=pb.INIT, frontendAddress=frontend_address))
    if reply.status != pb.OK:
        raise RuntimeError(f"INIT answered {pb.SchedulerToFrontendStatus.Name(reply.status)}")
    return loop


def _peer_tls() -> PeerTls:
    try:
        return PeerTls.of(settings.GRPC_SERVER_TLS, settings.GRPC_CLIENT_TLS)
    except TlsSettingError as exc:
        raise GrpcUnavailable(str(exc)) from None


def _cancelled(exc: BaseException) -> bool:
    return isinstance(exc, grpc.aio.AioRpcError) and exc.code() == grpc.StatusCode.CANCELLED


def _number(value: float) -> str:
    """Unix seconds or a step as Prometheus reads them (never `1.7e+09`)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))
