"""What the rule tools cost the scheduler: `python -m tests.load.rules_bench`.

Prints two figures, each a ratio of measurements taken in the same run (the
machine is shared and noisy, absolute rates drift between runs):

1. Classification cost per request with rule statistics on vs off: the
   admission path (`classify` + `judge`) alone, then with the hit counts
   (`RuleStats.record`; the target, at most 1.1x), then with everything the
   doors record (`AdmissionLog.record`: hit counts plus the traffic sample).
   The variants alternate in chunks of 500 requests; each figure is the best
   of the repeats.
2. Dispatch rate while dry runs run back to back, as a ratio to the rate
   without them. An asyncio `SchedulerRuntime` (the dispatcher the server
   runs) is fed by frontend tasks that classify, judge, record and enqueue
   as the doors do, and drained by querier worker tasks. The traffic sample
   holds 1,000 tenants x 1,000 requests; a thread runs dry runs of all of
   them back to back exactly as the server does (copy on the loop, rows in
   the thread, matching in the niced import worker process via
   `api.rest.offload.ImportWorker` and `api.rest.dry_run.tenant_reports`).
   Target: at least 0.9.

Dispatch is measured in alternating windows, the dry-run worker process
paused (SIGSTOP) and then running, so the machine's other load drifts through
both kinds alike. `--check` exits 1 when a target is missed;
`--tenants`/`--per-tenant` shrink the sample for a quick run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import os
import signal
import sys
import tempfile
import threading
import time
from typing import Any

from scheduler_core.admission_log import AdmissionLog
from scheduler_core.classify import classify
from scheduler_core.model import QueueConfig, Request, TenantLimits
from scheduler_core.rejection import judge
from scheduler_core.rule_stats import RuleStats
from scheduler_core.runtime import SchedulerRuntime
from scheduler_core.traffic import TrafficSample
from scheduler_core.validation import tenant_limits_from_dict

__all__ = ["main"]

TARGET_COST_RATIO = 1.1
TARGET_DISPATCH_RATIO = 0.9
NOW = 1_700_000_000.0
# Dashboards ask the same few queries over and over with moving times.
QUERIES = [f'sum(rate(http_requests_total{{job="svc-{i}"}}[5m]))' for i in range(60)] + [
    f'histogram_quantile(0.99, rate(latency_bucket{{svc="{i}"}}[1m]))' for i in range(40)
]


def tenant_block(variant: int) -> dict[str, Any]:
    """Three priority rules and one rejection rule; variants differ in regexes."""
    return {
        "max_queriers_per_tenant": 4,
        "query_priority": {
            "enabled": True,
            "default_priority": 0,
            "priorities": [
                {
                    "priority": 9,
                    "reserved_queriers": 1,
                    "query_attributes": [{"regex": f"svc-{variant}\\b"}, {"panel_id": "4"}],
                },
                {
                    "priority": 5,
                    "query_attributes": [
                        {"regex": "histogram_quantile", "time_range_limit": {"max": "2h"}}
                    ],
                },
                {"priority": 2, "query_attributes": [{"user_agent_regex": "^grafana"}]},
            ],
        },
        "query_rejection": {
            "enabled": True,
            "query_attributes": [{"regex": f"svc-{variant + 50}\\b", "api_type": "query"}],
        },
    }


def request_fields(n: int) -> dict[str, Any]:
    span = (300.0, 3600.0, 6 * 3600.0)[n % 3]
    end = NOW - (n % 7) * 60.0
    return {
        "query": QUERIES[n % len(QUERIES)],
        "api_type": "query_range" if n % 4 else "query",
        "start": end - span,
        "end": end,
        "step": 30.0,
        "headers": {"User-Agent": "grafana/11" if n % 2 else "curl", "X-Panel-Id": str(n % 9)},
    }


def _admit(limits: TenantLimits, fields: dict[str, Any], now: float) -> tuple[Any, Any]:
    found = classify(now=now, **fields)
    return found, judge(limits, found.info, now)


# --- 1. classification cost ---------------------------------------------------------


def _time_admissions(
    work: list[tuple[str, dict[str, Any]]],
    limits: TenantLimits,
    variant: str,
    log: AdmissionLog,
) -> float:
    """Seconds per request of one variant over `work` (the loops differ only in it)."""
    stats, record = log.stats.record, log.record
    began = time.perf_counter()
    if variant == "off":
        for _tenant, fields in work:
            _admit(limits, fields, NOW)
    elif variant == "stats":
        for tenant, fields in work:
            _, verdict = _admit(limits, fields, NOW)
            stats(tenant, limits, verdict)
    else:
        for tenant, fields in work:
            found, verdict = _admit(limits, fields, NOW)
            record(tenant, limits, verdict, found.info, found.component, NOW)
    return (time.perf_counter() - began) / len(work)


def bench_cost(requests: int, repeats: int) -> dict[str, float]:
    """Best per-request time of each variant; variants alternate in small chunks."""
    limits = tenant_limits_from_dict(tenant_block(0))
    work = [(f"t{n % 100}", request_fields(n)) for n in range(requests)]
    chunks = [work[i : i + 500] for i in range(0, len(work), 500)]
    variants = ("off", "stats", "stats+sample")
    log = AdmissionLog(RuleStats(), TrafficSample())
    for chunk in chunks:  # warm the parse cache and the records
        _time_admissions(chunk, limits, "stats+sample", log)
    totals = {name: float("inf") for name in variants}
    gc.disable()
    try:
        for _ in range(repeats):
            spent = dict.fromkeys(variants, 0.0)
            for chunk in chunks:
                for name in variants:
                    spent[name] += _time_admissions(chunk, limits, name, log) * len(chunk)
            for name in variants:
                totals[name] = min(totals[name], spent[name] / len(work))
    finally:
        gc.enable()
    return totals


# --- 2. dispatch while dry runs run -------------------------------------------------


class _Done:
    """Observer: resolves each request's future when a querier completes it."""

    def __init__(self) -> None:
        self.waiting: dict[str, asyncio.Future[None]] = {}
        self.completed = 0

    def on_completed(self, request: Request) -> None:
        self.completed += 1
        future = self.waiting.pop(request.id, None)
        if future is not None and not future.done():
            future.set_result(None)


class _Workload:
    """Frontend tasks (classify, judge, record, enqueue, await) and querier workers."""

    def __init__(
        self,
        runtime: SchedulerRuntime,
        done: _Done,
        log: AdmissionLog,
        limits: dict[str, TenantLimits],
        frontends: int = 40,
    ) -> None:
        self.runtime, self.done, self.log, self.limits = runtime, done, log, limits
        self.frontends = frontends
        self.ids = itertools.count()
        self.tasks: list[asyncio.Task[None]] = []

    async def _frontend(self, k: int) -> None:
        tenants = list(self.limits)
        n = k
        while True:
            n += self.frontends
            tenant = tenants[n % len(tenants)]
            now = time.time()
            found, verdict = _admit(self.limits[tenant], request_fields(n), now)
            rid = f"r{next(self.ids)}"
            self.log.record(tenant, self.limits[tenant], verdict, found.info, found.component, now)
            if verdict.rejected:
                await asyncio.sleep(0)
                continue
            future = asyncio.get_running_loop().create_future()
            self.done.waiting[rid] = future
            request = Request(
                id=rid, tenant_id=tenant, component=found.component, priority=verdict.priority
            )
            self.runtime.enqueue(request)
            await future

    async def _worker(self, querier: str, worker_id: int) -> None:
        while True:
            request = await self.runtime.next_request(querier, worker_id)
            self.runtime.complete(request.id)

    def start(self) -> None:
        for q in range(8):
            for _ in range(4):
                worker_id = self.runtime.connect_querier(f"q{q}")
                self.tasks.append(asyncio.create_task(self._worker(f"q{q}", worker_id)))
        self.tasks += [asyncio.create_task(self._frontend(k)) for k in range(self.frontends)]

    async def rate(self, seconds: float) -> float:
        """Completions per second over the next `seconds`."""
        count, began = self.done.completed, time.perf_counter()
        await asyncio.sleep(seconds)
        return (self.done.completed - count) / (time.perf_counter() - began)

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


def _prefill(log: AdmissionLog, limits: dict[str, TenantLimits], per_tenant: int) -> None:
    n = 0
    for tenant, tenant_limits in limits.items():
        for _ in range(per_tenant):
            n += 1
            arrived = NOW + n * 0.001
            found, verdict = _admit(tenant_limits, request_fields(n), arrived)
            log.record(tenant, tenant_limits, verdict, found.info, found.component, arrived)


def _dry_runs_back_to_back(
    loop: asyncio.AbstractEventLoop,
    log: AdmissionLog,
    blocks: dict[str, dict[str, Any]],
    worker: Any,
    stop: threading.Event,
    took: list[float],
) -> None:
    """What the server does for each dry run, over and over until `stop`."""
    from api.rest.dry_run import tenant_reports

    drafts = {t: tenant_block(i + 1) for i, t in enumerate(blocks)}

    async def copy() -> dict[str, list[Any]]:
        return {t: log.traffic.requests(t) for t in log.traffic.tenants()}

    while not stop.is_set():
        began = time.perf_counter()
        entries = asyncio.run_coroutine_threadsafe(copy(), loop).result()
        jobs = [
            (t, [e.to_row() for e in sample], blocks[t], drafts[t]) for t, sample in entries.items()
        ]
        try:
            reports = worker.call(tenant_reports, jobs, [f"q{q}" for q in range(8)])
        except Exception:
            if stop.is_set():
                return  # the worker was closed under us at the end of the run
            raise
        assert len(reports) == len(blocks)
        took.append(time.perf_counter() - began)


def bench_dispatch(tenants: int, per_tenant: int, window: float, rounds: int) -> dict[str, Any]:
    """Dispatch in alternating windows: the dry-run worker paused, then running.

    Pausing the worker process (SIGSTOP) rather than running phases one
    after the other keeps the two kinds of window interleaved, so the
    machine's other load drifts through both alike.
    """
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from api.rest.offload import ImportWorker

    blocks = {f"tenant-{i}": tenant_block(i) for i in range(tenants)}
    limits = {t: tenant_limits_from_dict(b) for t, b in blocks.items()}
    log = AdmissionLog(RuleStats(), TrafficSample(per_tenant=per_tenant, max_bytes=1 << 30))
    began = time.perf_counter()
    _prefill(log, limits, per_tenant)
    prefill = time.perf_counter() - began
    worker = ImportWorker(os.path.join(tempfile.gettempdir(), "rules-bench.sqlite3"))
    pid = worker.call(os.getpid)  # started (Django set up) before any timing

    async def run() -> dict[str, Any]:
        done = _Done()
        runtime = SchedulerRuntime(QueueConfig(), observer=done)
        for tenant, tenant_limits in limits.items():
            runtime.set_tenant_limits(tenant, tenant_limits)
        await runtime.start()
        load = _Workload(runtime, done, log, limits)
        load.start()
        stop, took = threading.Event(), []
        thread = threading.Thread(
            target=_dry_runs_back_to_back,
            args=(asyncio.get_running_loop(), log, blocks, worker, stop, took),
            daemon=True,
        )
        thread.start()
        await asyncio.sleep(2.0)  # warm-up; the first job is on its way to the worker
        quiet: list[float] = []
        busy: list[float] = []
        for _ in range(rounds):
            os.kill(pid, signal.SIGSTOP)
            quiet.append(await load.rate(window))
            os.kill(pid, signal.SIGCONT)
            busy.append(await load.rate(window))
        stop.set()
        await load.stop()
        await runtime.stop(drain_timeout=0)
        return {"quiet": quiet, "busy": busy, "dry_runs": took}

    try:
        figures = asyncio.run(run())
    finally:
        os.kill(pid, signal.SIGCONT)
        worker.close()
    figures["prefill"] = prefill
    figures["sampled"] = sum(len(log.traffic.requests(t)) for t in log.traffic.tenants())
    return figures


def _rates(rates: list[float]) -> str:
    return " ".join(f"{r:.0f}" for r in rates)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--per-tenant", type=int, default=1000)
    parser.add_argument("--window", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    missed = []

    cost = bench_cost(args.requests, args.repeats)
    print("classification cost per request (classify + judge), best of", args.repeats)
    for name, seconds in cost.items():
        ratio = seconds / cost["off"]
        print(f"  {name:<13} {seconds * 1e6:7.2f} us   {ratio:5.3f}x of off")
    stats_ratio = cost["stats"] / cost["off"]
    if stats_ratio > TARGET_COST_RATIO:
        missed.append(f"stats on/off {stats_ratio:.3f}x > {TARGET_COST_RATIO}x")

    figures = bench_dispatch(args.tenants, args.per_tenant, args.window, args.rounds)
    quiet, busy = figures["quiet"], figures["busy"]
    ratio = sum(busy) / sum(quiet)
    runs = figures["dry_runs"]
    print(
        f"dispatch with dry runs of {args.tenants} tenants x {args.per_tenant} sampled requests "
        f"({figures['sampled']} rows, prefilled in {figures['prefill']:.1f} s) back to back, "
        f"{args.rounds} x ({args.window:.0f} s paused + {args.window:.0f} s running)"
    )
    print(f"  without dry runs   {sum(quiet) / len(quiet):9.0f} requests/s  ({_rates(quiet)})")
    print(f"  with dry runs      {sum(busy) / len(busy):9.0f} requests/s  ({_rates(busy)})")
    print(f"  ratio {ratio:.3f}")
    shown = ", ".join(f"{t:.1f}" for t in runs) or "none finished yet"
    print(f"  dry runs completed: {len(runs)} ({shown} s each, pauses included)")
    if ratio < TARGET_DISPATCH_RATIO:
        missed.append(f"dispatch ratio {ratio:.3f} < {TARGET_DISPATCH_RATIO}")
    if missed:
        print("missed targets: " + "; ".join(missed))
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
