"""How long a `/metrics` scrape holds the event loop: `python -m tests.load.scrape_bench`.

A scrape reads the loop's state on the loop and formats the text in a
worker thread (`api.wire.loop_metrics`). What it reads of the queue there
was a whole `QueueSnapshot`; it is now `RequestQueue.counts()`. In one
process, with the server's GC settings (`config/asgi.py`), this:

1. times both readings of the same queue, alternately (minimum of the
   repeats), and prints their ratio;
2. formats the registry's text in this thread, with the library's
   `generate_latest` and with ours, `api.wire.exposition.write_latest`
   (the same bytes, with less work per series), alternately, and prints
   their ratio;
3. runs whole scrapes through the view (`api.wire.metrics.metrics_view`)
   while a task sleeping 1 ms at a time records the loop's longest gap,
   and prints the median and the worst gap, with the scrape's size.

The queue holds `--tenants` tenants with a request in each of two
components; `--two-priorities` adds a second request at another
priority to every leaf (the shape priority rules give a leaf).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from tests.load.in_process_django import setup_django

__all__ = ["main"]


def fill(runtime: Any, tenants: int, two_priorities: bool) -> None:
    from scheduler_core.model import QueryPriority, Request, TenantLimits

    priorities = (0, 5) if two_priorities else (0,)
    for i in range(tenants):
        tenant = f"tenant-{i:05d}"
        if two_priorities:
            limits = TenantLimits(query_priority=QueryPriority(enabled=True))
            runtime.set_tenant_limits(tenant, limits)
        for component in ("ingester", "store-gateway"):
            for priority in priorities:
                rid = f"{tenant}:{component}:{priority}"
                runtime.enqueue(
                    Request(id=rid, tenant_id=tenant, component=component, priority=priority)
                )


def best_of(read: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        read()
        best = min(best, time.perf_counter() - began)
    return best


def _series(text: bytes) -> list[str]:
    return [line.rsplit(" ", 1)[0] for line in text.decode().splitlines()]


def formatting_times(rounds: int, repeats: int) -> tuple[float, float]:
    """The best times of `generate_latest` and `write_latest` over the served registry."""
    from prometheus_client.exposition import generate_latest

    from api.wire.exposition import write_latest
    from api.wire.metrics import REGISTRY

    # The same lines, values aside: clocks and CPU counters move between two calls.
    if _series(write_latest(REGISTRY)) != _series(generate_latest(REGISTRY)):
        raise SystemExit("write_latest and generate_latest disagree on this registry")
    library, ours = [], []
    for _ in range(rounds):
        library.append(best_of(lambda: generate_latest(REGISTRY), repeats))
        ours.append(best_of(lambda: write_latest(REGISTRY), repeats))
    return min(library), min(ours)


async def scrape_stalls(scrapes: int) -> tuple[list[float], int]:
    """Each scrape's longest loop gap (seconds) and the last scrape's size."""
    from django.test import RequestFactory

    from api.wire.metrics import metrics_view

    longest, stop = 0.0, False

    async def probe() -> None:
        nonlocal longest
        while not stop:
            began = time.perf_counter()
            await asyncio.sleep(0.001)
            longest = max(longest, time.perf_counter() - began)

    task = asyncio.get_running_loop().create_task(probe())
    gaps: list[float] = []
    size = 0
    for _ in range(scrapes):
        await asyncio.sleep(0.05)
        longest = 0.0
        response = await metrics_view(RequestFactory().get("/metrics"))
        await asyncio.sleep(0.005)  # the probe's wake-up after the scrape
        gaps.append(longest)
        size = len(response.content)
    stop = True
    await task
    return gaps, size


async def run(args: argparse.Namespace) -> None:
    from api.wire import runtime_host

    host = await runtime_host.ensure_started()
    runtime = host.runtime
    fill(runtime, args.tenants, args.two_priorities)
    queued = len(runtime.queue)
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)  # config/asgi.py's defaults
    snapshots, counts = [], []
    for _ in range(args.rounds):
        snapshots.append(best_of(runtime.snapshot, args.repeats))
        counts.append(best_of(runtime.queue.counts, args.repeats))
    snap, count = min(snapshots), min(counts)
    library, ours = formatting_times(args.rounds, args.repeats)
    gaps, size = await scrape_stalls(args.scrapes)
    await runtime_host.shutdown(drain_timeout=0)
    shape = "two priorities per leaf" if args.two_priorities else "one priority"
    print(f"queue: {args.tenants:,} tenants x 2 components, {shape}; {queued:,} queued")
    print(
        f"on-loop read per scrape (min of {args.rounds}x{args.repeats}, alternating): "
        f"snapshot {snap * 1e3:.1f} ms, counts {count * 1e3:.1f} ms "
        f"(counts/snapshot {count / snap:.2f})"
    )
    print(
        f"formatting in the worker thread (min of {args.rounds}x{args.repeats}, alternating): "
        f"generate_latest {library * 1e3:.1f} ms, write_latest {ours * 1e3:.1f} ms "
        f"(write_latest/generate_latest {ours / library:.2f})"
    )
    print(
        f"loop stall per /metrics scrape ({args.scrapes} scrapes of {size / 1e6:.1f} MB): "
        f"median {statistics.median(gaps) * 1e3:.1f} ms, worst {max(gaps) * 1e3:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--two-priorities", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scrapes", type=int, default=7)
    args = parser.parse_args()
    setup_django("scrape-bench-")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
