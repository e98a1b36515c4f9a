"""What live inspectors cost: bytes to each browser, main-thread time, dispatch rate.

Run `python -m tests.load.inspector_bench` from the repository root. A real
Daphne (own process, own database) holds 10,000 tenants with queued work;
frontends keep that backlog steady in a closed loop (every answered request
is replaced by a new one for the next tenant) while queriers answer at once,
so dispatching is bound by the scheduler's own CPU. The dispatch rate is
measured with no inspector open, then with N inspectors open in headless
Chromium (Debian's /usr/bin/chromium), in the same run because machines are
noisy. Prints bytes/s per browser (target < 50 KB/s), main-thread time per
applied update from the page's own performance measures (target < 16 ms), and
the dispatch-rate ratio (target >= 0.9).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from playwright.async_api import Page, async_playwright

from loadgen.daphne_process import DaphneProcess
from loadgen.wsclients import FrontendClient, QuerierClient
from tests.browser import CHROMIUM, CHROMIUM_ARGS

__all__ = ["Load", "main"]

USER = ("bench", "bench-viewer-pw-123")
DONE = {"result", "failed", "rejected"}


def server_cpu(server: DaphneProcess) -> float:
    """CPU seconds the Daphne process has used (user + system), from /proc."""
    assert server.proc is not None
    fields = Path(f"/proc/{server.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Load:
    """Closed-loop frontends over many tenants and instant queriers."""

    def __init__(self, server: DaphneProcess, tenants: int, queriers: int, workers: int) -> None:
        self.server = server
        self.tenants = tenants
        self.queriers_n, self.workers = queriers, workers
        self.frontend_token = server.issue_token("frontend")
        self.querier_token = server.issue_token("querier")
        self.ids = itertools.count(1)
        self.next_tenant = itertools.cycle(range(tenants))
        self.frontends: list[FrontendClient] = []
        self.queriers: list[QuerierClient] = []
        self.served = 0
        self.last_cpu = 0.0  # server CPU seconds per second in the last `rate()`
        # Share of the server's loop the live views took around the last `rate()`.
        self.last_live = 0.0
        self._pending: set[asyncio.Task[None]] = set()

    def message(self) -> dict[str, Any]:
        now = time.time()
        return {
            "type": "enqueue",
            "id": next(self.ids),
            "tenant": f"tenant-{next(self.next_tenant):05d}",
            "query": 'sum(rate(http_requests_total{job="api"}[5m]))',
            "api_type": "query_range",
            "start": now - 3600,
            "end": now,
            "step": 60,
        }

    def _replace(self, client: FrontendClient) -> Any:
        def on_reply(msg: dict[str, Any]) -> None:
            if msg.get("type") in DONE:
                self.served += msg.get("type") == "result"
                task = asyncio.get_running_loop().create_task(client.send(self.message()))
                self._pending.add(task)
                task.add_done_callback(self._pending.discard)

        return on_reply

    async def start(self, frontends: int = 4) -> None:
        url = self.server.ws_url
        for _ in range(frontends):
            client = FrontendClient(f"{url}/ws/frontend/", self.frontend_token, lambda _: None)
            client.on_reply = self._replace(client)
            await client.start()
            self.frontends.append(client)
        for i in range(self.tenants):
            await self.frontends[i % frontends].send(self.message())
        for q in range(self.queriers_n):
            querier = QuerierClient(
                f"{url}/ws/querier/", self.querier_token, f"q-{q}", workers=self.workers
            )
            await querier.start()
            self.queriers.append(querier)

    async def rate(self, seconds: float) -> float:
        # The live views' loop seconds are read from /metrics just before and
        # just after the window, so the scrapes' own cost stays outside it.
        live_before = await asyncio.to_thread(live_loop_seconds, self.server)
        before, started = self.served, time.perf_counter()
        cpu_before = server_cpu(self.server)
        await asyncio.sleep(seconds)
        elapsed = time.perf_counter() - started
        self.last_cpu = (server_cpu(self.server) - cpu_before) / elapsed
        served = self.served - before
        live_after = await asyncio.to_thread(live_loop_seconds, self.server)
        self.last_live = (live_after - live_before) / (time.perf_counter() - started)
        return served / elapsed

    async def stop(self) -> None:
        for frontend in self.frontends:
            frontend.on_reply = lambda _: None
        for task in list(self._pending):
            task.cancel()
        for querier in self.queriers:
            await querier.close()
        for frontend in self.frontends:
            await frontend.close()


def live_loop_seconds(server: DaphneProcess) -> float:
    """The server's `queue_inspector_live_loop_seconds_total`, from its /metrics."""
    with urllib.request.urlopen(f"{server.base_url}/metrics", timeout=60) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("queue_inspector_live_loop_seconds_total "):
                return float(line.split()[1])
    raise RuntimeError("queue_inspector_live_loop_seconds_total is missing from /metrics")


def live_share(share: float, ratio: float, server_busy: float) -> str:
    """The live views' loop share, and what it says when the clients set the rate.

    With the server's core not full (`server_busy` under 95%), the load
    clients (sharing a core with the browsers) set the dispatch rate, so the
    measured ratio says more about the machine than the server; the views'
    share of the loop then bounds what they took from a server-bound rate.
    """
    line = f"live views took {100 * share:.1f}% of the server's loop"
    if server_busy < 0.95:
        line += (
            f"; the server was {100 * server_busy:.0f}% busy, so the load clients set the "
            f"rate: a server-bound rate would be about {1 - share:.3f} of the baseline "
            f"(measured {ratio:.3f})"
        )
    return line


def niced_chromium(niceness: int) -> str:
    """Chromium behind `nice`, so that on a small machine the browsers' own
    rendering takes idle CPU and the ratio shows what the server spends on them."""
    if niceness <= 0:
        return CHROMIUM
    wrapper = Path(tempfile.mkdtemp(prefix="qi-bench-")) / "chromium"
    wrapper.write_text(f'#!/bin/sh\nexec nice -n {niceness} {CHROMIUM} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def pin_server_apart(server: DaphneProcess) -> str:
    """Give the server one core and everything else (load clients, browsers) the rest.

    In a deployment browsers run on operators' machines; on a 2-core box 20
    Chromium renderers would otherwise take CPU from the server and the ratio
    would measure the machine, not what inspectors cost the scheduler.
    """
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2 or server.proc is None:
        return "not pinned (one core)"
    server_core, rest = {cores[0]}, set(cores[1:])
    for task in Path(f"/proc/{server.proc.pid}/task").iterdir():
        os.sched_setaffinity(int(task.name), server_core)
    os.sched_setaffinity(0, rest)  # the browsers started later inherit this
    return f"server pinned to core {cores[0]}; load clients and browsers on {sorted(rest)}"


async def open_inspectors(
    context: Any, base_url: str, count: int, login: bool = True
) -> list[Page]:
    pages: list[Page] = []
    if login:
        first = await context.new_page()
        await first.goto(f"{base_url}/login/")
        await first.fill("#id_username", USER[0])
        await first.fill("#id_password", USER[1])
        await first.click("button.primary")
        await first.wait_for_url(f"{base_url}/")
        pages.append(first)
    while len(pages) < count:
        page = await context.new_page()
        await page.goto(f"{base_url}/")
        pages.append(page)
    for page in pages:
        await page.wait_for_function("window.inspectorClient && window.inspectorClient.frames > 0")
    return pages


TRACE_CATEGORIES = [
    "devtools.timeline",
    "blink.user_timing",
    "disabled-by-default-devtools.timeline",
]


class ApplyTrace:
    """Chromium's own thread-time (CPU) accounting of update tasks, via CDP tracing.

    The page's `qi-apply` measure is wall-clock: with 20 renderers sharing
    one core it includes the time the renderer waited for the CPU. The trace
    gives each main-thread task's thread time (`tdur`), so per update we
    report the CPU of the task that applied it (parse, apply, ack) and all
    main-thread CPU (including style, layout, paint and timers) divided by the
    updates applied on that thread.
    """

    def __init__(self, session: Any) -> None:
        self.session = session
        self.events: list[dict[str, Any]] = []
        self.done: asyncio.Future[bool] | None = None
        session.on("Tracing.dataCollected", lambda p: self.events.extend(p["value"]))
        session.on("Tracing.tracingComplete", self._complete)

    def _complete(self, _: Any) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_result(True)

    async def start(self) -> None:
        self.events.clear()
        self.done = asyncio.get_running_loop().create_future()
        config = {"includedCategories": TRACE_CATEGORIES}
        await self.session.send(
            "Tracing.start", {"traceConfig": config, "transferMode": "ReportEvents"}
        )

    async def stop(self) -> tuple[list[float], float]:
        """CPU ms of each applying task, and all main-thread CPU ms per update."""
        await self.session.send("Tracing.end")
        assert self.done is not None
        await asyncio.wait_for(self.done, 60)
        applies: dict[tuple[int, int], list[int]] = {}
        tasks: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
        for e in self.events:
            thread = (e.get("pid", 0), e.get("tid", 0))
            if e.get("name") == "qi-apply" and e.get("ph") == "b":
                applies.setdefault(thread, []).append(e["ts"])
            elif e.get("name") == "RunTask" and e.get("ph") == "X" and "tdur" in e:
                tasks.setdefault(thread, []).append((e["ts"], e["ts"] + e["dur"], e["tdur"]))
        per_task: list[float] = []
        total_cpu, updates = 0, 0
        for thread, starts in applies.items():
            mine = sorted(tasks.get(thread, []))
            total_cpu += sum(t[2] for t in mine)
            updates += len(starts)
            for ts in starts:
                enclosing = [t for t in mine if t[0] <= ts <= t[1]]
                if enclosing:  # the outermost task that ran the apply
                    per_task.append(max(enclosing, key=lambda t: t[1] - t[0])[2] / 1000)
        return per_task, (total_cpu / 1000 / updates) if updates else float("nan")


RESET = """() => { performance.clearMeasures();
  const c = window.inspectorClient; c.bytes = 0; c.frames = 0; }"""
READ = """() => ({bytes: window.inspectorClient.bytes, frames: window.inspectorClient.frames,
  applies: performance.getEntriesByName('qi-apply').map(e => e.duration)})"""


async def run(args: argparse.Namespace) -> None:
    server = DaphneProcess(grpc=False, extra_env={"LOG_LEVEL": "WARNING"})
    server.start()
    try:
        server.create_user(*USER, group="viewer")
        placement = pin_server_apart(server) if args.pin else "not pinned (--no-pin)"
        print(f"  ({placement})")
        load = Load(server, args.tenants, args.queriers, args.workers)
        await load.start()
        await asyncio.sleep(args.warmup * 2)
        before = await load.rate(args.seconds)
        print(f"  (no inspector: server CPU {100 * load.last_cpu:.0f}% of a core)")
        async with async_playwright() as playwright:
            executable = niced_chromium(args.nice)
            browser = await playwright.chromium.launch(
                executable_path=executable, args=CHROMIUM_ARGS
            )
            context = await browser.new_context(viewport={"width": 1400, "height": 900})
            pages = await open_inspectors(context, server.base_url, 1)
            single = await measure(pages, load, args)
            pages += await open_inspectors(context, server.base_url, args.inspectors - 1, False)
            watched = await measure(pages, load, args)
            await browser.close()
        await asyncio.sleep(args.warmup)
        after = await load.rate(args.seconds)
        print(f"  (no inspector again: server CPU {100 * load.last_cpu:.0f}% of a core)")
        await load.stop()
    finally:
        server.cleanup()
    alone = (before + after) / 2
    print(f"tenants with queued work: {args.tenants}; {args.seconds:.0f} s per phase")
    print(
        f"no inspector: dispatch rate {before:.0f}/s before and {after:.0f}/s after "
        f"the browsers (mean {alone:.0f}/s is the baseline)"
    )
    report(1, alone, *single)
    report(args.inspectors, alone, *watched)


async def measure(
    pages: list[Page], load: Load, args: argparse.Namespace
) -> tuple[float, float, list[dict[str, Any]]]:
    """Dispatch rate and each page's bytes, frames and apply times over one phase."""
    await asyncio.sleep(args.warmup)
    for page in pages:
        await page.evaluate(RESET)
    started = time.perf_counter()
    rate = await load.rate(args.seconds)
    elapsed = time.perf_counter() - started
    readings = [await page.evaluate(READ) for page in pages]
    # Tracing costs the browsers CPU, so it runs after the timed phase: the
    # wall-clock figures and the dispatch rate above are untraced.
    trace = ApplyTrace(await pages[0].context.new_cdp_session(pages[0]))
    await trace.start()
    await asyncio.sleep(args.seconds / 2)
    readings[0]["cpu_tasks"], readings[0]["cpu_all"] = await trace.stop()
    print(f"  ({len(pages)} open: server CPU {100 * load.last_cpu:.0f}% of a core)")
    readings[0]["live"], readings[0]["busy"] = load.last_live, load.last_cpu
    return rate, elapsed, readings


def report(
    inspectors: int, alone: float, watched: float, elapsed: float, readings: list[dict[str, Any]]
) -> None:
    per_browser = [r["bytes"] / elapsed for r in readings]
    frames = [r["frames"] / elapsed for r in readings]
    applies = sorted(d for r in readings for d in r["applies"])
    p95 = applies[int(0.95 * (len(applies) - 1))] if applies else float("nan")
    print(f"{inspectors} inspector(s) open:")
    print(
        f"  bytes/s per browser: mean {statistics.mean(per_browser) / 1000:.1f} KB/s, "
        f"max {max(per_browser) / 1000:.1f} KB/s (target < 50 KB/s); "
        f"frames/s per browser: mean {statistics.mean(frames):.2f}"
    )
    print(
        f"  main-thread time per update: mean {statistics.mean(applies) if applies else 0:.2f} ms, "
        f"p95 {p95:.2f} ms, max {applies[-1] if applies else 0:.2f} ms "
        f"over {len(applies)} updates (target < 16 ms)"
    )
    cpu = sorted(readings[0].get("cpu_tasks", []))
    if cpu:
        print(
            f"  main-thread CPU time per update (Chromium trace thread time, not wall clock; "
            f"traced {len(readings)}-browser window after the timed one): "
            f"applying task mean {statistics.mean(cpu):.2f} ms, "
            f"p95 {cpu[int(0.95 * (len(cpu) - 1))]:.2f} ms over {len(cpu)} updates; "
            f"all main-thread CPU incl. style/layout/paint {readings[0]['cpu_all']:.2f} ms "
            "per update"
        )
    print(
        f"  dispatch rate {watched:.0f}/s: ratio to no inspector {watched / alone:.3f} "
        "(target >= 0.9)"
    )
    print("  " + live_share(readings[0]["live"], watched / alone, readings[0]["busy"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=10_000)
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
