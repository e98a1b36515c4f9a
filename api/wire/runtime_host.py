"""One SchedulerRuntime per process, started lazily on Daphne's event loop.

Daphne has no ASGI lifespan, so `config.asgi` calls `ensure_started()` on the
first scope and every consumer awaits it before touching the runtime. Here:
the host's parts (the runtime, its observers, the admission log, the gRPC
door) and their start and stop, the SIGTERM drain (`api.wire.drain_signals`),
and the module's functions other code reaches the one host through.
Keeping the runtime's config and the open sockets' tokens equal to the
database's (apply on commit, hear other processes over the channel layer,
reconcile every few seconds) is the host's `DatabaseSync` part
(`api.wire.host_sync`). All runtime calls happen on this one loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Coroutine
from typing import Any

from django.conf import settings

from api.cluster import replica_board
from api.wire.config_group import CONFIG_GROUP, keep_membership
from api.wire.consumers.guard import CLOSE_SHUTDOWN, close_all
from api.wire.drain_signals import SignalDrain
from api.wire.frontends import FrontendRow, WebsocketFrontends, frontend_rows
from api.wire.host_sync import DatabaseSync
from api.wire.loop_load import LoopLoad, load_block
from api.wire.observers import FanOutObserver
from api.wire.queue_peers import QueuePeers
from api.wire.usage_block import PUBLISHED_ROWS, UsagePages
from scheduler_core.admission_log import AdmissionLog
from scheduler_core.model import QueueConfig
from scheduler_core.rule_stats import RuleStats
from scheduler_core.runtime import SchedulerRuntime
from scheduler_core.stats import RollingStats
from scheduler_core.tenant_usage import TenantUsage
from scheduler_core.traffic import TrafficSample

__all__ = [
    "CONFIG_GROUP",
    "RuntimeHost",
    "add_background",
    "add_observer",
    "config_version",
    "ensure_started",
    "frontends",
    "get_host",
    "get_runtime",
    "shutdown",
    "started",
]

log = logging.getLogger(__name__)

# How long a stop waits for its helper tasks once cancelled, and for leaving
# the channel layer's groups (Redis may be the reason they are slow).
HELPERS_STOP_SECONDS = 5.0


class RuntimeHost(DatabaseSync):
    """The process's runtime plus what keeps it in step with the database (`DatabaseSync`)."""

    def __init__(self) -> None:
        self.observer = FanOutObserver()
        self.stats = RollingStats()
        self.observer.add(self.stats)
        # Querier time per tenant (the inspector's "Querier time" panel, queue/usage/).
        self.usage = TenantUsage()
        self.observer.add(self.usage)
        self.loop_load = LoopLoad(dispatched=lambda: self.stats.dispatched_total)
        # Rule hit counts and the recent-traffic sample both doors feed
        # (bounds: TRAFFIC_SAMPLE_PER_TENANT, TRAFFIC_SAMPLE_MAX_BYTES).
        self.admission_log = AdmissionLog(
            RuleStats(),
            TrafficSample(
                settings.TRAFFIC_SAMPLE_PER_TENANT,
                settings.TRAFFIC_SAMPLE_MAX_BYTES,
            ),
            refused=self.observer.on_refused,
        )
        self.runtime = SchedulerRuntime(QueueConfig(), observer=self.observer)
        self._usage_pages = UsagePages(self.usage, self.runtime.queue)
        # A rule's "since the version" counts restart with each change of limits.
        super().__init__(self.runtime, on_limits=self.admission_log.stats.applied)
        self.websocket_frontends = WebsocketFrontends()
        self.grpc_door: Any = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop = asyncio.get_running_loop()
        self._stopping = False
        # Not among `_tasks`: stop() cancels those, and the drain runs stop().
        self._signals = SignalDrain(self._loop, self._drain_then_exit)

    # -- start / stop ---------------------------------------------------------

    async def start(self) -> None:
        with self.reconciles.attempt():
            await self.reconcile()
        await self.runtime.start()
        self._listen_locally()
        listening = await self._group.join()
        if listening is not None:
            self._spawn(listening, "config listener")
        # Other replicas ask this one about its queue (queue/requests/ across replicas).
        self.queue_peers = QueuePeers(self)
        self._spawn(self.queue_peers.serve(), "queue requests")
        reconcile_every = settings.CONFIG_RECONCILE_SECONDS
        self._spawn(self._reconcile_loop(reconcile_every), "config reconcile")
        rejoins = [self._group.rejoin, self.queue_peers.rejoin]
        membership = keep_membership(rejoins, settings.GROUP_REJOIN_SECONDS)
        self._spawn(membership, "group membership")
        self._spawn(self._stats_loop(), "stats sampler")
        self._spawn(self.loop_load.run(), "loop load")
        for name, factory in _backgrounds.items():
            self._spawn(factory(), name)
        if getattr(settings, "REDIS_URL", ""):
            prefix = getattr(settings, "CHANNEL_PREFIX", "asgi")
            summaries = replica_board.publish_loop(self, settings.REDIS_URL, prefix)
            self._spawn(summaries, "replica summaries")
        await self._start_grpc()
        self._signals.install()
        log.info("scheduler runtime started at config version %d", self.applied_version)

    async def stop(self, drain_timeout: float) -> None:
        """Stop accepting, drain, fail the rest back; then stop the helpers."""
        if self._stopping:
            return
        self._stopping = True
        self._signals.restore()
        self._stop_listening_locally()
        leftovers = await self.runtime.stop(drain_timeout=drain_timeout)
        if leftovers:
            log.warning("shutdown failed %d queued or running requests back", len(leftovers))
        if self.grpc_door is not None:
            with contextlib.suppress(Exception):
                await self.grpc_door.stop(grace=1.0)
        await self._cancel_helpers()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._group.leave(), HELPERS_STOP_SECONDS)

    async def _cancel_helpers(self) -> None:
        """Cancel the helper tasks; wait for them, but not for ever.

        Awaited without a bound, one loop that lost its cancel (see
        `api.cluster.lost_cancels`) held the stop, and with it the sockets'
        close and the process's exit, until SIGKILL.
        """
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if not tasks:
            return
        _, running = await asyncio.wait(tasks, timeout=HELPERS_STOP_SECONDS)
        if running:
            names = ", ".join(sorted(task.get_name() for task in running))
            log.warning(
                "stop: %s still running %.0fs after their cancel; stopping without them",
                names,
                HELPERS_STOP_SECONDS,
            )

    def _spawn(self, coro: Any, name: str) -> None:
        task = self._loop.create_task(coro, name=name)
        task.add_done_callback(_log_death)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _stats_loop(self) -> None:
        while True:
            self.stats.record_queue_length(len(self.runtime.queue))
            await asyncio.sleep(1.0)

    def load(self) -> dict[str, Any]:
        """This process's event loop over the last seconds (`api.wire.loop_load`)."""
        return load_block(self.loop_load)

    def usage_block(self, limit: int = PUBLISHED_ROWS) -> dict[str, Any]:
        """The busiest tenants by querier time (`api.wire.usage_block`), on the loop."""
        return self._usage_pages.block(limit)

    # -- frontends -------------------------------------------------------------

    def frontends(self) -> list[FrontendRow]:
        return frontend_rows(self.websocket_frontends, self.grpc_door)

    @property
    def frontend_clients(self) -> int:
        """Connected frontend streams over both protocols (Cortex's gauge counts
        streams; the inspector counts frontends)."""
        return sum(row.streams for row in self.frontends())

    # -- gRPC and signals -----------------------------------------------------

    async def _start_grpc(self) -> None:
        port = int(getattr(settings, "GRPC_PORT", 0) or 0)
        if not port:
            return
        try:
            from api.wire.grpc.admission import Admission
            from api.wire.grpc.server import start_grpc_server

            self.grpc_door = await start_grpc_server(
                self.runtime,
                admission=Admission(self.runtime, admission_log=self.admission_log),
                port=port,
                host=settings.GRPC_HOST,
                advertise_address=settings.GRPC_ADVERTISE_ADDRESS or None,
                server_tls=settings.GRPC_SERVER_TLS,
                client_tls=settings.GRPC_CLIENT_TLS,
                implementation=getattr(settings, "GRPC_SERVER", None),
                batch_writes=settings.GRPC_WRITE_BATCHING,
                max_connection_idle=settings.GRPC_MAX_CONNECTION_IDLE_SECONDS,
            )
        except Exception:
            log.exception("gRPC server did not start on port %d; websockets still serve", port)

    async def _drain_then_exit(self, sig: signal.Signals) -> None:
        drain = settings.SHUTDOWN_DRAIN_TIMEOUT
        log.info("%s: draining the queue for up to %.0fs before exiting", sig.name, drain)
        await self.stop(drain)
        # Every request still queued or running has been failed back
        # (websocket `failed`, Cortex QueryResult); now each socket sends
        # what it still had to and closes with a close frame, rather than
        # dropping when the process exits.
        closed = await close_all(CLOSE_SHUTDOWN)
        log.info("%s: closed %d websocket connections", sig.name, closed)


def _log_death(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("runtime host task %s died", task.get_name(), exc_info=task.exception())


_host: RuntimeHost | None = None
_starting: asyncio.Future[RuntimeHost] | None = None
_pending_observers: list[Any] = []
# Loops other apps run beside the runtime (the inspector's chart history),
# by name: started with the host, cancelled at its stop like its own tasks.
_backgrounds: dict[str, Callable[[], Coroutine[Any, Any, None]]] = {}


async def ensure_started() -> RuntimeHost:
    """Start the process's runtime once; concurrent callers wait for the same start."""
    global _host, _starting
    if _host is not None:
        return _host
    if _starting is None:
        _starting = asyncio.get_running_loop().create_future()
        try:
            host = RuntimeHost()
            for observer in _pending_observers:
                host.observer.add(observer)
            await host.start()
        except BaseException as exc:
            _starting.set_exception(exc)
            _starting.exception()  # the raise below reports it; callers retry
            _starting = None
            raise
        _host = host
        _starting.set_result(host)
        return host
    return await asyncio.shield(_starting)


def get_host() -> RuntimeHost:
    """The started host; raises RuntimeError before `ensure_started()`."""
    if _host is None:
        raise RuntimeError("the scheduler runtime has not started yet")
    return _host


def get_runtime() -> SchedulerRuntime:
    return get_host().runtime


def started() -> bool:
    return _host is not None


def frontends() -> list[FrontendRow]:
    """This replica's connected frontends; none before the runtime starts."""
    return _host.frontends() if _host is not None else []


def config_version() -> int | None:
    """The config version this replica's scheduler runs (None before its first)."""
    if _host is None or _host.applied_version < 0:
        return None
    return _host.applied_version


def add_observer(observer: Any) -> None:
    """Observe the runtime's events; works before and after the start."""
    if observer not in _pending_observers:
        _pending_observers.append(observer)
    if _host is not None:
        _host.observer.add(observer)


def add_background(name: str, factory: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run `factory()` as a task of every host from its start to its stop.

    Registered once per name (an app's `ready()` may run again in tests); a
    host that is already running starts it at once.
    """
    if name in _backgrounds:
        return
    _backgrounds[name] = factory
    if _host is not None:
        _host._spawn(factory(), name)  # noqa: SLF001 - the module owns its host


async def shutdown(drain_timeout: float | None = None) -> None:
    """Stop the runtime (draining up to the timeout) and forget it."""
    global _host, _starting
    host, _host, _starting = _host, None, None
    if host is not None:
        timeout = settings.SHUTDOWN_DRAIN_TIMEOUT if drain_timeout is None else drain_timeout
        await host.stop(timeout)
