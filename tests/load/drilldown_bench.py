"""What the drill-down costs: loop time per listing page, bytes per browser, dispatch rate.

Run `python -m tests.load.drilldown_bench` from the repository root. A real
Daphne (own process, own database) holds 10,000 tenants with queued work in
a closed loop (`tests.load.inspector_bench.Load`, several requests per
tenant) plus one deep tenant whose single leaf holds a standing backlog, so
about 100,000 requests are queued while queriers answer at once and the
traffic stays steady. Then, in one run (machines are noisy):

- listing pages over REST: the deep leaf walked from its head to its end in
  pages of 50 by cursor, a search over that leaf, and the whole queue's
  first pages; each page's scheduler-loop time is the server's own figure
  (`Server-Timing: loop`, the synchronous steps of the page summed), printed
  as p50/p99 (target p99 < 50 ms);
- the dispatch rate with no browser, then with N inspectors (headless
  Debian Chromium) each drilled into a node, half of them searching, as a
  ratio (target >= 0.9), and the bytes per second each browser receives with
  its drill-down open (target <= 60 KB/s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import urllib.request
from typing import Any

from playwright.async_api import async_playwright

from loadgen.daphne_process import DaphneProcess
from loadgen.wsclients import FrontendClient
from tests.browser import CHROMIUM_ARGS
from tests.load.inspector_bench import (
    READ,
    RESET,
    USER,
    Load,
    live_share,
    niced_chromium,
    open_inspectors,
    pin_server_apart,
)

__all__ = ["main"]

DEEP = "deep-tenant"


def deep_message(i: int) -> dict[str, Any]:
    now = time.time()
    query = f'sum(rate(needle_{i % 97}_total{{job="api"}}[5m]))' if i % 10 == 0 else "up"
    return {
        "type": "enqueue",
        "id": f"deep-{i}",
        "tenant": DEEP,
        "query": query,
        "api_type": "query_range",
        "start": now - 3600,
        "end": now,
        "step": 60,
    }


class ClosedLoad(Load):
    """`Load` with `per_tenant` requests outstanding for every tenant."""

    def __init__(self, server: DaphneProcess, per_tenant: int, **kwargs: Any) -> None:
        super().__init__(server, **kwargs)
        self.per_tenant = per_tenant

    async def start(self, frontends: int = 4) -> None:
        await super().start(frontends)
        for _ in range(self.per_tenant - 1):
            for i in range(self.tenants):
                await self.frontends[i % frontends].send(self.message())


def page_loop_ms(server: DaphneProcess, token: str, query: str) -> tuple[float, dict[str, Any]]:
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/queue/requests/?{query}",
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        timing = response.headers["Server-Timing"]
        body = json.loads(response.read())
    return float(timing.split("dur=")[1]), body


async def until_queued(server: DaphneProcess, token: str, wanted: int) -> int:
    """Wait (up to two minutes) until the server has taken every deep request in."""
    query = f"tenant={DEEP}&component=ingester&limit=1"
    deadline = time.monotonic() + 120
    while True:
        _, body = await asyncio.to_thread(page_loop_ms, server, token, query)
        if body["total"] >= wanted or time.monotonic() > deadline:
            return int(body["total"])
        await asyncio.sleep(0.5)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1)))]


def print_pages(label: str, times: list[float]) -> None:
    print(
        f"  {label}: {len(times)} pages, loop time p50 {percentile(times, 0.5):.2f} ms, "
        f"p99 {percentile(times, 0.99):.2f} ms, max {max(times):.2f} ms (target p99 < 50 ms)"
    )


async def listing_pages(server: DaphneProcess, token: str, deep: int, tenants: int) -> None:
    """Walk the deep leaf by cursor, search it, and page the whole queue."""
    walk: list[float] = []
    cursor = ""
    seen = 0
    first_total = None
    while True:
        query = f"tenant={DEEP}&component=ingester&limit=50" + (
            f"&cursor={cursor}" if cursor else ""
        )
        ms, body = await asyncio.to_thread(page_loop_ms, server, token, query)
        walk.append(ms)
        if first_total is None:
            first_total = body["total"]
        seen += len(body["results"])
        cursor = body["next"] or ""
        if not cursor:
            break
    print(
        f"  deep leaf: {first_total} queued in that one leaf when the walk began "
        f"({deep} were sent), {seen} rows walked"
    )
    print_pages("deep leaf, head to end by cursor, 50 a page", walk)
    searches = []
    for needle in ("needle_7_", "needle_", "nothing-matches"):
        for _ in range(10):
            ms, _ = await asyncio.to_thread(
                page_loop_ms, server, token, f"tenant={DEEP}&search={needle}&limit=50"
            )
            searches.append(ms)
    print_pages("deep leaf searched (substring; the total counts every match)", searches)
    whole: list[float] = []
    cursor = ""
    for _ in range(40):
        query = "limit=50" + (f"&cursor={cursor}" if cursor else "")
        ms, body = await asyncio.to_thread(page_loop_ms, server, token, query)
        whole.append(ms)
        cursor = body["next"] or ""
    print(f"  whole queue: total {body['total']} queued or running")
    print_pages(f"whole queue, first 40 pages (rounds over {tenants + 1} tenants)", whole)


DRILL = """([tenant, search]) => { const d = window.inspectorDrill; d.show({tenant});
  if (search) { const box = document.getElementById('drill-search');
    box.value = search; box.dispatchEvent(new Event('input')); } }"""


async def run(args: argparse.Namespace) -> None:
    server = DaphneProcess(grpc=False, extra_env={"LOG_LEVEL": "WARNING"})
    server.start()
    try:
        server.create_user(*USER, group="viewer")
        server.run_python(
            "from api.store.services import tenant_put\n"
            f"tenant_put(tenant_id={DEEP!r}, expected_version=None, author=None, source='cli',\n"
            "           config={'max_outstanding_requests_per_tenant': 1000000})\n"
        )
        token = server.issue_token("viewer")
        await asyncio.sleep(1.5)  # the config reconcile applies the deep tenant's limit
        placement = pin_server_apart(server) if args.pin else "not pinned (--no-pin)"
        print(f"  ({placement})")
        deep = FrontendClient(
            f"{server.ws_url}/ws/frontend/", server.issue_token("frontend"), lambda _: None
        )
        await deep.start()
        for i in range(args.deep):
            await deep.send(deep_message(i))
        filled = await until_queued(server, token, args.deep)
        print(f"  ({filled} queued in the deep leaf before the load started)")
        load = ClosedLoad(
            server,
            args.per_tenant,
            tenants=args.tenants,
            queriers=args.queriers,
            workers=args.workers,
        )
        await load.start()
        await asyncio.sleep(args.warmup * 2)
        before = await load.rate(args.seconds)
        before_cpu = load.last_cpu
        print(f"  (no browser: server CPU {100 * before_cpu:.0f}% of a core)")
        print("listing pages over REST, with traffic flowing:")
        await listing_pages(server, token, args.deep, args.tenants)
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=niced_chromium(args.nice), args=CHROMIUM_ARGS
            )
            context = await browser.new_context(viewport={"width": 1400, "height": 900})
            pages = await open_inspectors(context, server.base_url, args.inspectors)
            await asyncio.sleep(args.warmup)
            for page in pages:
                await page.evaluate(RESET)
            started = time.perf_counter()
            plain = await load.rate(args.seconds)
            plain_cpu, plain_live = load.last_cpu, load.last_live
            plain_elapsed = time.perf_counter() - started
            plain_reads = [await page.evaluate(READ) for page in pages]
            plain_bytes = [r["bytes"] / plain_elapsed for r in plain_reads]
            plain_frames = statistics.mean(r["frames"] for r in plain_reads) / plain_elapsed
            print(
                f"  ({len(pages)} open, no drill-down: server CPU {100 * plain_cpu:.0f}% of a core)"
            )
            for n, page in enumerate(pages):
                tenant = DEEP if n % 4 == 0 else f"tenant-{(n * 397) % args.tenants:05d}"
                search = ("needle_" if tenant == DEEP else "rate(") if n % 2 else ""
                await page.evaluate(DRILL, [tenant, search])
            await asyncio.sleep(args.warmup)
            for page in pages:
                await page.evaluate(RESET)
            started = time.perf_counter()
            watched = await load.rate(args.seconds)
            watched_cpu, watched_live = load.last_cpu, load.last_live
            elapsed = time.perf_counter() - started
            readings = [await page.evaluate(READ) for page in pages]
            rows = [
                await page.evaluate("document.querySelectorAll('#drill-rows > li').length")
                for page in pages
            ]
            print(f"  ({len(pages)} drilling: server CPU {100 * load.last_cpu:.0f}% of a core)")
            await browser.close()
        await asyncio.sleep(args.warmup)
        after = await load.rate(args.seconds)
        after_cpu = load.last_cpu
        await load.stop()
        await deep.close()
    finally:
        server.cleanup()
    alone = (before + after) / 2
    per_browser = [r["bytes"] / elapsed for r in readings]
    frames = statistics.mean(r["frames"] for r in readings) / elapsed
    print(
        f"{args.tenants} tenants x {args.per_tenant} outstanding + {args.deep} in one leaf; "
        f"{args.seconds:.0f} s per phase"
    )
    print(
        f"no browser: dispatch rate {before:.0f}/s before and {after:.0f}/s after "
        f"(mean {alone:.0f}/s is the baseline)"
    )

    def per_request(cpu: float, rate: float) -> float:
        return 1e6 * cpu / rate if rate else float("nan")

    alone_us = (per_request(before_cpu, before) + per_request(after_cpu, after)) / 2
    print(f"  server CPU per dispatched request: {alone_us:.0f} us")
    print(f"{len(readings)} inspectors open, no drill-down:")
    print(
        f"  bytes/s per browser: mean {statistics.mean(plain_bytes) / 1000:.1f} KB/s "
        f"in {plain_frames:.2f} frames/s; "
        f"dispatch rate {plain:.0f}/s: ratio to no browser {plain / alone:.3f}; "
        f"server CPU per request {per_request(plain_cpu, plain):.0f} us"
    )
    print("  " + live_share(plain_live, plain / alone, plain_cpu))
    print(
        f"{len(readings)} inspectors drilled in (rows shown: min {min(rows)}, max {max(rows)}), "
        "half of them searching:"
    )
    print(
        f"  bytes/s per browser: mean {statistics.mean(per_browser) / 1000:.1f} KB/s, "
        f"max {max(per_browser) / 1000:.1f} KB/s (target <= 60 KB/s), in {frames:.2f} frames/s"
    )
    print(
        f"  dispatch rate {watched:.0f}/s: ratio to no browser {watched / alone:.3f} "
        f"(target >= 0.9), to the same inspectors without drill-down {watched / plain:.3f}; "
        f"server CPU per request {per_request(watched_cpu, watched):.0f} us"
    )
    print("  " + live_share(watched_live, watched / alone, watched_cpu))
    # The rate ratio is the target; this one says whether the server or the
    # load clients set the rate (1.0 would mean browsers cost the server nothing).
    print(
        f"  server CPU per request, no browser / {len(readings)} drilling: "
        f"{alone_us / per_request(watched_cpu, watched):.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--per-tenant", type=int, default=2)
    parser.add_argument("--deep", type=int, default=100_000)
    parser.add_argument("--inspectors", type=int, default=20)
    parser.add_argument("--queriers", type=int, default=4)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--nice", type=int, default=10, help="browser niceness (0: none)")
    parser.add_argument(
        "--no-pin", dest="pin", action="store_false", help="share every core (noisier)"
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
