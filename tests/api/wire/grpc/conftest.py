"""An in-process scheduler (runtime + gRPC server) and Cortex-like clients."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
import uvloop

from api.wire.grpc.admission import Admission
from api.wire.grpc.server import GrpcFrontDoor, start_grpc_server
from api.wire.observers import install_observer
from scheduler_core.model import QueueConfig, Request
from scheduler_core.runtime import SchedulerRuntime

# Wall-clock "now" seen by classification: fixed, so components are stable.
NOW = 1_700_000_000.0

# The door runs on uvloop in a served replica (config.serve) and on asyncio's
# loop when EVENT_LOOP=asyncio. The modules that lean on the transport (TLS,
# HTTP/2 framing, flow control and keepalive, hostile frames, chaos) run on
# both; the rest on asyncio's, which behaves the same above the transport.
_ON_BOTH_LOOPS = frozenset(
    {
        "test_grpc_tls",
        "test_grpc_tls_handshakes",
        "test_grpc_deadlines",
        "test_grpc_lean_http2",
        "test_grpc_lean_flow_control",
        "test_grpc_lean_hostile_requests",
        "test_grpc_lean_fuzz",
        "test_grpc_chaos",
    }
)


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> dict[str, Any]:
    loops: dict[str, Any] = {"asyncio": asyncio.new_event_loop}
    if item.module is not None and item.module.__name__.rpartition(".")[2] in _ON_BOTH_LOOPS:
        loops["uvloop"] = uvloop.new_event_loop
    return loops


class Recorder:
    """Runtime observer that lets a test await scheduler events."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Request, Any]] = []
        self._changed = asyncio.Condition()

    def _add(self, kind: str, request: Request, extra: Any = None) -> None:
        self.events.append((kind, request, extra))
        asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def on_enqueued(self, request: Request) -> None:
        self._add("enqueued", request)

    def on_dispatched(self, request: Request, querier_id: str, worker_id: int, wait: float) -> None:
        self._add("dispatched", request, (querier_id, worker_id))

    def on_completed(self, request: Request) -> None:
        self._add("completed", request)

    def on_cancelled(self, request: Request) -> None:
        self._add("cancelled", request)

    def on_failed(self, request: Request, reason: str) -> None:
        self._add("failed", request, reason)

    def of(self, kind: str) -> list[Request]:
        return [request for k, request, _ in self.events if k == kind]

    async def wait_for(self, kind: str, count: int = 1, timeout: float = 5.0) -> list[Request]:
        async def enough() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: len(self.of(kind)) >= count)

        await asyncio.wait_for(enough(), timeout)
        return self.of(kind)


@dataclass
class Scheduler:
    runtime: SchedulerRuntime
    door: GrpcFrontDoor
    recorder: Recorder
    address: str
    channels: list[grpc.aio.Channel] = field(default_factory=list)

    def channel(self) -> grpc.aio.Channel:
        channel = grpc.aio.insecure_channel(self.address)
        self.channels.append(channel)
        return channel


def our_errors(records: list[logging.LogRecord]) -> list[str]:
    """The ERROR (and worse) messages our own loggers wrote among `records`.

    Not asyncio's: grpc.aio's poller hands a late completion of an earlier
    test's cancelled call (its loop closed since) to the loop running now,
    which logs "Event loop is closed" as an error; under load it landed in
    a later test that asserted no error at all.
    """
    ours = ("api.", "scheduler_core.")
    return [
        r.getMessage() for r in records if r.levelno >= logging.ERROR and r.name.startswith(ours)
    ]


async def running_scheduler(config: QueueConfig, **door_options: Any) -> Scheduler:
    """A started runtime with its gRPC door (`door_options`: `start_grpc_server`'s)."""
    runtime = SchedulerRuntime(config, forget_check_interval=3600.0)
    recorder = Recorder()
    install_observer(runtime, recorder)
    await runtime.start()
    admission = Admission(runtime, wall_clock=lambda: NOW)
    door = await start_grpc_server(
        runtime, port=0, host="127.0.0.1", admission=admission, **door_options
    )
    return Scheduler(runtime, door, recorder, f"127.0.0.1:{door.port}")


@pytest.fixture(params=["tenant-first", "component-first"])
async def scheduler(request: pytest.FixtureRequest) -> AsyncIterator[Scheduler]:
    """A scheduler in each tree layout."""
    sched = await running_scheduler(QueueConfig(layout=request.param))
    yield sched
    await _stopped(sched)


async def _stopped(sched: Scheduler) -> None:
    """Close the test's channels, then stop the door and the runtime at once."""
    for channel in sched.channels:
        await channel.close()
    await sched.door.stop(0)
    await sched.runtime.stop(drain_timeout=0)


@pytest.fixture(params=["lean", "grpcio"])
async def sched(request: pytest.FixtureRequest) -> AsyncIterator[Scheduler]:
    """A scheduler on each gRPC server (the lean HTTP/2 one and grpcio's)."""
    sched = await running_scheduler(QueueConfig(), implementation=request.param)
    yield sched
    await _stopped(sched)


def waiting_workers(sched: Scheduler) -> int:
    """Querier workers blocked waiting for work."""
    snapshot = sched.runtime.snapshot()
    return sum(w.waiting for q in snapshot.queriers for w in q.workers)


@pytest.fixture
async def door() -> AsyncIterator[GrpcFrontDoor]:
    """The lean door alone on a bare runtime (a module may define its own `door`)."""
    runtime = SchedulerRuntime(QueueConfig(), forget_check_interval=3600.0)
    await runtime.start()
    door = await start_grpc_server(
        runtime, port=0, admission=Admission(runtime, wall_clock=lambda: NOW), implementation="lean"
    )
    yield door
    await door.stop(0)
    await runtime.stop(drain_timeout=0)
