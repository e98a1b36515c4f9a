"""The benchmark behind `manage.py loadtest`: one phase of load against one endpoint.

A phase connects N queriers (answering at once) and M frontends over
loopback and either keeps `window` requests outstanding per frontend
(closed loop: throughput) or sends at a fixed `rate` (open loop: latency
when queriers are not saturated). It reports completions per second over
the measured interval and the *scheduler overhead*:

    for each request sent while at least one querier worker was idle
    (as the clients see it: welcomed or answered, and not yet handed a new
    request), the time from the frontend sending `enqueue` to a querier
    receiving the matching `request`.

With an idle worker waiting, any time beyond the transport is time the
scheduler held the request; the relay phase measures the same quantity
with no scheduling, so the two can be compared. Requests are "lost" if no
terminal reply (result, failed, rejected) arrived by the end of the drain.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loadgen.wsclients import FrontendClient, QuerierClient

__all__ = [
    "PhaseResult",
    "PhaseSpec",
    "loop_cpu_seconds",
    "percentile",
    "process_cpu_seconds",
    "run_phase",
]

_TERMINAL = frozenset({"result", "failed", "rejected", "error"})
_QUERIES = (
    "sum by (job) (rate(http_requests_total{job=~'api.*'}[5m]))",
    "histogram_quantile(0.99, sum by (le) (rate(request_duration_seconds_bucket[5m])))",
    "max_over_time(process_resident_memory_bytes[10m]) offset 1h",
    "count(up == 0)",
)
# (seconds before now where the range ends, its length): ingester,
# store-gateway and both.
_RANGES = ((0, 3600), (2 * 86400, 86400), (0, 86400))
_STEP = 60


@dataclass(frozen=True, slots=True)
class PhaseSpec:
    name: str
    frontend_url: str
    querier_url: str
    frontend_token: str
    querier_token: str
    queriers: int = 50
    workers: int = 4
    frontends: int = 10
    tenants: int = 10
    window: int = 20
    rate: float | None = None
    seconds: float = 10.0
    warmup: float = 1.0
    drain: float = 10.0
    # Step-aligned ranges, as Grafana sends them; unaligned ones differ on
    # every request, so nothing about them can be cached.
    aligned: bool = True


@dataclass(slots=True)
class PhaseResult:
    name: str
    sent: int = 0
    completed: int = 0
    measured: int = 0
    seconds: float = 0.0
    rejected: int = 0
    failed: int = 0
    errors: int = 0
    lost: int = 0
    overhead: list[float] = field(default_factory=list)
    server_cpu: float = 0.0  # seconds of server CPU over the whole phase
    # The server's event loop thread: its CPU seconds per second over the
    # whole phase (from /metrics), None if it could not be read.
    loop_busy: float | None = None

    @property
    def cpu_per_request_us(self) -> float:
        return self.server_cpu / self.completed * 1e6 if self.completed else 0.0

    @property
    def throughput(self) -> float:
        return self.measured / self.seconds if self.seconds else 0.0

    def overhead_ms(self, q: float) -> float:
        return percentile(self.overhead, q) * 1000.0


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(q * len(ordered) + 0.999999)))
    return ordered[rank - 1]


class _Phase:
    """The shared bookkeeping of one phase's clients (all on one loop)."""

    def __init__(self, spec: PhaseSpec) -> None:
        self.spec = spec
        self.result = PhaseResult(spec.name)
        self.idle_workers = 0
        self.sent_at: dict[str, tuple[float, bool]] = {}
        self.outstanding: dict[str, int] = {}
        self.windows: list[asyncio.Semaphore] = []
        self.measuring = False
        self.stop = False
        self.seq = itertools.count(1)
        self.now = time.perf_counter
        self.all_done = asyncio.Event()

    def on_ready(self, worker: int) -> None:
        self.idle_workers += 1

    def on_request(self, msg: dict[str, Any]) -> None:
        self.idle_workers -= 1
        key = msg.get("headers", {}).get("X-Loadtest-Id")
        stamp = self.sent_at.pop(key, None)
        if stamp is not None and stamp[1] and self.measuring:
            self.result.overhead.append(self.now() - stamp[0])

    def reply_handler(self, index: int) -> Callable[[dict[str, Any]], None]:
        def on_reply(msg: dict[str, Any]) -> None:
            kind = msg.get("type")
            if kind not in _TERMINAL:
                return
            self.result.completed += kind == "result"
            self.result.measured += kind == "result" and self.measuring
            self.result.rejected += kind == "rejected"
            self.result.failed += kind == "failed"
            self.result.errors += kind == "error"
            key = f"{index}:{msg.get('id')}"
            self.sent_at.pop(key, None)
            if self.outstanding.pop(key, None) is not None:
                self.windows[index].release()
            if self.stop and not self.outstanding:
                self.all_done.set()

        return on_reply

    def message(self, index: int) -> tuple[str, dict[str, Any]]:
        n = next(self.seq)
        key = f"{index}:{n}"
        now = time.time()
        if self.spec.aligned:
            now -= now % _STEP
        ago, length = _RANGES[n % len(_RANGES)]
        msg = {
            "type": "enqueue",
            "id": n,
            "tenant": f"tenant-{n % self.spec.tenants}",
            "query": _QUERIES[n % len(_QUERIES)],
            "start": now - ago - length,
            "end": now - ago,
            "step": _STEP,
            "headers": {"X-Loadtest-Id": key},
        }
        return key, msg

    async def send(self, index: int, client: FrontendClient) -> None:
        key, msg = self.message(index)
        self.outstanding[key] = index
        self.sent_at[key] = (self.now(), self.idle_workers > 0)
        self.result.sent += 1
        await client.send(msg)


async def _closed_loop(phase: _Phase, index: int, client: FrontendClient) -> None:
    window = phase.windows[index]
    while not phase.stop:
        await window.acquire()
        if phase.stop:
            return
        await phase.send(index, client)


async def _open_loop(phase: _Phase, clients: list[FrontendClient], rate: float) -> None:
    start = phase.now()
    sent = 0
    turn = itertools.cycle(range(len(clients)))
    while not phase.stop:
        due = int((phase.now() - start) * rate)
        while sent < due and not phase.stop:
            index = next(turn)
            await phase.send(index, clients[index])
            sent += 1
        await asyncio.sleep(0.001)


_LOOP_CPU = "queue_inspector_event_loop_cpu_seconds_total "


def loop_cpu_seconds(base_url: str) -> float | None:
    """The server's event-loop thread CPU from its /metrics; None if unreadable."""
    try:
        with urllib.request.urlopen(f"{base_url}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(_LOOP_CPU):
            return float(line.removeprefix(_LOOP_CPU))
    return None


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (Linux /proc; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run_phase(
    spec: PhaseSpec, server_pid: int | None = None, base_url: str | None = None
) -> PhaseResult:
    """Connect, load for warmup + seconds, stop sending, drain, count.

    With `base_url`, the server's /metrics is read before and after, for how
    busy its event loop was over the phase (`loop_busy`).
    """
    cpu_before = process_cpu_seconds(server_pid) if server_pid else 0.0
    loop_before = await asyncio.to_thread(loop_cpu_seconds, base_url) if base_url else None
    began = time.perf_counter()
    result = await _run_phase(spec)
    if server_pid:
        result.server_cpu = process_cpu_seconds(server_pid) - cpu_before
    if loop_before is not None and base_url:
        loop_after = await asyncio.to_thread(loop_cpu_seconds, base_url)
        if loop_after is not None:
            result.loop_busy = (loop_after - loop_before) / (time.perf_counter() - began)
    return result


async def _run_phase(spec: PhaseSpec) -> PhaseResult:
    phase = _Phase(spec)
    phase.windows = [asyncio.Semaphore(spec.window) for _ in range(spec.frontends)]
    queriers = [
        QuerierClient(
            spec.querier_url,
            spec.querier_token,
            f"{spec.name}-querier-{i}",
            workers=spec.workers,
            on_request=phase.on_request,
            on_ready=phase.on_ready,
        )
        for i in range(spec.queriers)
    ]
    frontends = [
        FrontendClient(spec.frontend_url, spec.frontend_token, phase.reply_handler(i))
        for i in range(spec.frontends)
    ]
    await asyncio.gather(*(q.start() for q in queriers))
    await asyncio.gather(*(f.start() for f in frontends))
    if spec.rate:
        drivers = [asyncio.create_task(_open_loop(phase, frontends, spec.rate))]
    else:
        drivers = [asyncio.create_task(_closed_loop(phase, i, f)) for i, f in enumerate(frontends)]
    await asyncio.sleep(spec.warmup)
    phase.measuring = True
    began = phase.now()
    await asyncio.sleep(spec.seconds)
    phase.measuring = False
    phase.result.seconds = phase.now() - began
    phase.stop = True
    for window in phase.windows:
        window.release()  # wake closed loops so they see `stop`
    await asyncio.gather(*drivers, return_exceptions=True)
    if phase.outstanding:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(phase.all_done.wait(), spec.drain)
    phase.result.lost = len(phase.outstanding)
    await asyncio.gather(*(f.close() for f in frontends), return_exceptions=True)
    await asyncio.gather(*(q.close() for q in queriers), return_exceptions=True)
    return phase.result
