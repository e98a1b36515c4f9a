"""Throughput and scheduling overhead of the Cortex gRPC path over loopback.

Run `python -m tests.load.grpc_bench` from the repository root. By default
it starts one real Daphne process (which serves both protocols on one
runtime) and measures, in the same run, the gRPC path and then the websocket
path with the same shape (N frontend connections, M worker streams, the same
window), and prints the ratio gRPC/websocket. The gRPC clients are the
lean ones of `tests.load.lean_grpc` (about what Cortex's Go clients cost);
`--clients grpcio` uses the `grpc.aio` stand-ins of `api.wire.grpc.clients`.
`--bare` measures gRPC alone against a process running only the runtime
and the gRPC server. This
process plays a Cortex query-frontend with N FrontendLoop streams and
queriers with M worker streams in total, whose "query" costs nothing.
Each frontend stream keeps a fixed window of requests outstanding, and the
window total never exceeds M, so a request never waits for a free
worker: the time from ENQUEUE sent to the request reaching a worker is the
scheduler's own overhead (two loopback hops included).

Prints dispatched requests/s, p50/p99 overhead and the lost count (requests
answered OK on enqueue whose result never came back), which must be 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import resource
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from api.wire.grpc.clients import (
    CortexFrontend,
    FrontendLoop,
    QuerierWorker,
    ReceivedResult,
    get_request,
)
from scheduler_core.pb import schedulerpb_pb2 as pb
from scheduler_core.pb.httpgrpc_pb2 import HTTPRequest
from tests.load.h2lite import GrpcCallError, StreamReset
from tests.load.lean_grpc import LeanFrontend, LeanQuerier, LeanWorker, Result

__all__ = ["BenchResult", "main", "run_bench", "serve"]

TENANTS = ("tenant-a", "tenant-b", "tenant-c", "tenant-d", "tenant-e")
WORKERS_PER_QUERIER = 10


@dataclass
class BenchResult:
    requests: int
    seconds: float
    lost: int
    rejected: int
    overheads: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        if not self.overheads:
            return float("nan")
        ordered = sorted(self.overheads)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def report(self, label: str) -> str:
        return (
            f"{label}: {self.requests} requests in {self.seconds:.2f}s = {self.rate:,.0f} req/s; "
            f"scheduling overhead p50 {self.percentile(0.5) * 1e3:.2f} ms, "
            f"p99 {self.percentile(0.99) * 1e3:.2f} ms; lost {self.lost}; rejected {self.rejected}"
        )


async def serve(port: int) -> None:
    """The scheduler process: a runtime and its gRPC server until killed."""
    from api.wire.grpc.server import start_grpc_server
    from scheduler_core.model import QueueConfig
    from scheduler_core.runtime import SchedulerRuntime

    runtime = SchedulerRuntime(QueueConfig(max_outstanding_requests_per_tenant=10_000))
    await runtime.start()
    door = await start_grpc_server(runtime, port=port, host="127.0.0.1")
    print(f"READY {door.port}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await door.stop(0)
        await runtime.stop(drain_timeout=0)


class _Driver:
    """Sends from each frontend stream with a fixed window of outstanding requests."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.sent_at: dict[int, float] = {}
        self.overheads: list[float] = []
        self.accepted: set[int] = set()
        self.answered: set[int] = set()
        self.rejected = 0
        self._next_id = 0
        self._slots: dict[int, asyncio.Semaphore] = {}
        self._owner: dict[int, int] = {}
        self.all_answered = asyncio.Event()

    def on_result(self, result: ReceivedResult | Result) -> None:
        self.answered.add(result.query_id)
        self._slots[self._owner.pop(result.query_id)].release()
        if len(self.answered) >= self.total:
            self.all_answered.set()

    def received(self, msg: pb.SchedulerToQuerier) -> None:
        self.overheads.append(time.perf_counter() - self.sent_at[msg.queryID])

    async def run_stream(
        self,
        index: int,
        enqueue: _Enqueue,
        share: int,
        window: int,
    ) -> None:
        slots = self._slots[index] = asyncio.Semaphore(window)
        for _ in range(share):
            await slots.acquire()
            self._next_id += 1
            query_id = self._next_id
            tenant = TENANTS[query_id % len(TENANTS)]
            params = [("query", f'sum(rate(http_requests_total{{job="{query_id % 7}"}}[5m]))')]
            params += [("start", "1700000000"), ("end", "1700003600"), ("step", "15")]
            self._owner[query_id] = index
            self.sent_at[query_id] = time.perf_counter()
            status = await enqueue(query_id, tenant, get_request("/api/v1/query_range", params))
            if status == pb.OK:
                self.accepted.add(query_id)
            else:
                self.rejected += 1
                self._owner.pop(query_id)
                slots.release()


_Enqueue = Callable[[int, str, HTTPRequest], Awaitable[int]]
# Per worker stream: wait for the next request; answer one.
_Worker = tuple[Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]]


class _LeanRig:
    """Clients on h2lite: about what Cortex's Go clients cost per request."""

    async def open(self, address: str, driver: _Driver, frontends: int, workers: int) -> _LeanRig:
        self.frontend = await LeanFrontend(address, driver.on_result).start()
        self.queriers = [
            LeanQuerier(address, f"querier-{i}")
            for i in range((workers + WORKERS_PER_QUERIER - 1) // WORKERS_PER_QUERIER)
        ]
        streams: list[LeanWorker] = [
            await self.queriers[i // WORKERS_PER_QUERIER].worker() for i in range(workers)
        ]
        self.workers: list[_Worker] = [(w.next, w.answer) for w in streams]
        self.loops = [await self.frontend.open_loop() for _ in range(frontends)]
        self.enqueues: list[_Enqueue] = [loop.enqueue for loop in self.loops]
        return self

    async def close(self) -> None:
        for querier in self.queriers:
            querier.close()
        await self.frontend.close()


class _GrpcioRig:
    """Clients on grpc.aio, as the tests use them."""

    async def open(self, address: str, driver: _Driver, frontends: int, workers: int) -> _GrpcioRig:
        self.channel = grpc.aio.insecure_channel(address)
        await asyncio.wait_for(self.channel.channel_ready(), 30)
        self.frontend = await CortexFrontend(address).start()
        self.frontend.on_result = driver.on_result
        self.streams = [
            await QuerierWorker(self.channel, f"querier-{i // WORKERS_PER_QUERIER}").open()
            for i in range(workers)
        ]
        self.workers: list[_Worker] = [
            (functools.partial(w.next, timeout=None), w.answer) for w in self.streams
        ]
        self.loops = [await self.frontend.open_loop() for _ in range(frontends)]
        self.enqueues: list[_Enqueue] = [
            functools.partial(_no_timeout, loop) for loop in self.loops
        ]
        return self

    async def close(self) -> None:
        for worker in self.streams:
            await worker.close()
        for loop in self.loops:
            loop.call.cancel()
        await self.channel.close()
        await self.frontend.close()


async def _no_timeout(loop: FrontendLoop, query_id: int, user_id: str, request: HTTPRequest) -> int:
    return await loop.enqueue(query_id, user_id, request, timeout=None)


async def _work(
    next_request: Callable[[], Awaitable[Any]],
    answer: Callable[[Any], Awaitable[None]],
    driver: _Driver,
) -> None:
    with contextlib.suppress(
        EOFError, grpc.aio.AioRpcError, StreamReset, GrpcCallError, asyncio.CancelledError
    ):
        while True:
            msg = await next_request()
            driver.received(msg)
            await answer(msg)


async def run_bench(
    address: str,
    *,
    requests: int,
    frontends: int,
    workers: int,
    clients: str = "lean",
    drain_timeout: float = 10.0,
) -> BenchResult:
    driver = _Driver(requests)
    rig_type = _LeanRig if clients == "lean" else _GrpcioRig
    rig: _LeanRig | _GrpcioRig = await rig_type().open(address, driver, frontends, workers)
    work = [asyncio.ensure_future(_work(*w, driver)) for w in rig.workers]
    window = max(1, workers // frontends)
    shares = [
        requests // frontends + (1 if i < requests % frontends else 0) for i in range(frontends)
    ]
    started = time.perf_counter()
    await asyncio.gather(
        *(driver.run_stream(i, send, shares[i], window) for i, send in enumerate(rig.enqueues))
    )
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(driver.all_answered.wait(), drain_timeout)
    elapsed = time.perf_counter() - started
    for task in work:
        task.cancel()
    await rig.close()
    return BenchResult(
        requests=len(driver.answered),
        seconds=elapsed,
        lost=len(driver.accepted - driver.answered),
        rejected=driver.rejected,
        overheads=driver.overheads,
    )


def _bench_from_args(address: str, args: argparse.Namespace) -> BenchResult:
    return asyncio.run(
        run_bench(
            address,
            requests=args.requests,
            frontends=args.frontends,
            workers=args.workers,
            clients=args.clients,
        )
    )


def _start_scheduler_process() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.load.grpc_bench", "--serve", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    if len(line) != 2 or line[0] != "READY":
        proc.kill()
        raise RuntimeError("the scheduler process did not start")
    return proc, f"127.0.0.1:{line[1]}"


async def _websocket_phase(server: object, frontends: int, workers: int, seconds: float) -> object:
    """The websocket protocol's numbers on the same server, same shape."""
    from loadgen.daphne_process import DaphneProcess
    from loadgen.loadtest import PhaseSpec, run_phase

    assert isinstance(server, DaphneProcess) and server.proc is not None
    queriers = max(1, workers // WORKERS_PER_QUERIER)
    spec = PhaseSpec(
        name="websocket",
        frontend_url=f"{server.ws_url}/ws/frontend/",
        querier_url=f"{server.ws_url}/ws/querier/",
        frontend_token=server.issue_token("frontend", "bench-frontend"),
        querier_token=server.issue_token("querier", "bench-querier"),
        queriers=queriers,
        workers=workers // queriers,
        frontends=frontends,
        window=max(1, workers // frontends),
        seconds=seconds,
    )
    return await run_phase(spec, server.proc.pid)


def _own_cpu_seconds() -> float:
    """This process's CPU: the clients of both phases run here."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _compare(args: argparse.Namespace) -> int:
    from loadgen.daphne_process import DaphneProcess
    from loadgen.loadtest import process_cpu_seconds

    with DaphneProcess(extra_env={"LOG_LEVEL": "WARNING"}) as server:
        assert server.proc is not None
        address = f"127.0.0.1:{server.grpc_port}"
        cpu_before, client_before = process_cpu_seconds(server.proc.pid), _own_cpu_seconds()
        grpc_result = _bench_from_args(address, args)
        grpc_cpu = process_cpu_seconds(server.proc.pid) - cpu_before
        grpc_client = _own_cpu_seconds() - client_before
        client_before = _own_cpu_seconds()
        ws = asyncio.run(
            _websocket_phase(server, args.frontends, args.workers, max(2.0, grpc_result.seconds))
        )
        ws_client = _own_cpu_seconds() - client_before
    shape = f"{args.frontends} frontend connections, {args.workers} worker streams"
    print(grpc_result.report(f"gRPC      ({shape}, {args.clients} clients)"))
    if grpc_result.requests:
        per_request = 1e6 / grpc_result.requests
        print(
            f"  server CPU {grpc_cpu * per_request:.0f} us/request; "
            f"bench clients {grpc_client * per_request:.0f} us/request"
        )
    ws_rate = getattr(ws, "throughput", 0.0)
    print(
        f"websocket ({shape}): {ws_rate:,.0f} req/s; scheduling overhead "
        f"p50 {ws.overhead_ms(0.5):.2f} ms, p99 {ws.overhead_ms(0.99):.2f} ms; "  # type: ignore[attr-defined]
        f"lost {ws.lost}"  # type: ignore[attr-defined]
    )
    ws_done = getattr(ws, "completed", 0)
    ws_client_us = ws_client / ws_done * 1e6 if ws_done else 0.0
    print(
        f"  server CPU {ws.cpu_per_request_us:.0f} us/request; "  # type: ignore[attr-defined]
        f"bench clients {ws_client_us:.0f} us/request"
    )
    ratio = grpc_result.rate / ws_rate if ws_rate else float("inf")
    print(f"ratio gRPC/websocket: {ratio:.2f}")
    lost = grpc_result.lost + ws.lost  # type: ignore[attr-defined]
    return 0 if lost == 0 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--frontends", type=int, default=10)
    parser.add_argument("--workers", type=int, default=40)
    parser.add_argument("--address", help="an already running scheduler's gRPC address")
    parser.add_argument("--bare", action="store_true", help="gRPC only, no Daphne, no websocket")
    parser.add_argument(
        "--clients",
        choices=("lean", "grpcio"),
        default="lean",
        help="gRPC client implementation: h2lite (near Go clients' cost) or grpc.aio",
    )
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        asyncio.run(serve(args.serve))
        return 0
    if args.address is None and not args.bare:
        return _compare(args)
    proc = None
    address = args.address
    if address is None:
        proc, address = _start_scheduler_process()
    try:
        result = _bench_from_args(address, args)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
    print(result.report(f"gRPC ({args.frontends} frontend streams, {args.workers} worker streams)"))
    return 0 if result.lost == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
