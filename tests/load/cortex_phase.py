"""One phase of `cortex_bench`: a scheduler, Cortex all-in-one in front of it, wrk's load.

`run_phase` starts the scheduler (Cortex's or ours, from `cortex_cluster`),
then Cortex all-in-one pointed at it, warms up, drives the saturating load
(under py-spy when profiling) and the light one with wrk, reads the CPU
seconds of both sides and what our replicas report of their own cost, and
stops everything. `Options` is what the command line asked for; the wrk
script sends `QUERIES` for `TENANTS` in turn.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.load.bench_processes import (
    Processes,
    free_port,
    gauge,
    group_cpu_seconds,
    group_memory_bytes,
    http_get,
    http_ok,
    thread_cpu_seconds,
    wait_until,
)
from tests.load.cortex_cluster import (
    ScaleOut,
    Scheduler,
    start_cortex_scheduler,
    start_our_scheduler,
)
from tests.load.cortex_report import PhaseResult, WrkResult
from tests.load.scheduler_metrics import dispatch_count, reported_cost, reported_us

__all__ = ["QUERIES", "TENANTS", "Options", "run_phase", "write_lua"]

TENANTS = ("tenant-a", "tenant-b", "tenant-c")
PREFIX = "/prometheus"  # v1.15.3's -http.prometheus-http-prefix default
# An instant query "now" (ingester), one three days back (store-gateway for
# our classification), an aggregation and a histogram quantile.
QUERIES = (
    "up",
    'sum(rate(http_requests_total{job="api"}[5m]))',
    "histogram_quantile(0.99, sum by (le) (rate(request_duration_seconds_bucket[1m])))",
    "count by (job) (up)",
)


@dataclass
class Options:
    cortex: str
    wrk: str
    project: Path
    duration: int
    light_duration: int
    connections: int
    threads: int
    rounds: int
    querier_concurrency: int
    profile: str | None
    py_spy: str
    replicas: int = 1
    scheduler_host: str = "query-scheduler.cortex-bench.test"
    variants: dict[str, dict[str, str]] = field(default_factory=dict)
    cortex_flags: list[str] = field(default_factory=list)
    workdir: Path = field(default_factory=Path)
    profiled: bool = False
    cluster: ScaleOut | None = None

    def labels(self) -> list[str]:
        """The phases of one round: Cortex, ours, then each variant of ours."""
        return ["cortex", "ours", *self.variants]


# --- the three kinds of process ---------------------------------------------


def cortex_all_in_one_flags(
    opts: Options, scheduler: str, http_port: int, grpc_port: int
) -> list[str]:
    data = opts.workdir / f"cortex-data-{http_port}"
    return [
        "-target=all",
        "-auth.enabled=true",
        "-log.level=warn",
        "-server.http-listen-address=127.0.0.1",
        f"-server.http-listen-port={http_port}",
        "-server.grpc-listen-address=127.0.0.1",
        f"-server.grpc-listen-port={grpc_port}",
        # query-frontend v2: enqueues on the scheduler, gets results on its gRPC port
        f"-frontend.scheduler-address={scheduler}",
        "-frontend.scheduler-dns-lookup-period=1s",
        "-frontend.instance-addr=127.0.0.1",
        # querier: workers on the scheduler, none on a v1 frontend
        f"-querier.scheduler-address={scheduler}",
        "-querier.frontend-address=",
        "-querier.dns-lookup-period=1s",
        f"-querier.max-concurrent={opts.querier_concurrency}",
        "-querier.worker-match-max-concurrent=true",
        # rings in memory, one replica, everything on loopback
        "-ring.store=inmemory",
        "-distributor.ring.store=inmemory",
        "-distributor.ring.instance-addr=127.0.0.1",
        "-distributor.replication-factor=1",
        "-ingester.lifecycler.addr=127.0.0.1",
        "-ingester.min-ready-duration=0s",
        "-ingester.final-sleep=0s",
        "-ingester.join-after=0s",
        "-compactor.ring.store=inmemory",
        "-store-gateway.sharding-ring.store=inmemory",
        "-ruler.ring.store=inmemory",
        # filesystem blocks storage in the temporary directory
        "-blocks-storage.backend=filesystem",
        f"-blocks-storage.filesystem.dir={data / 'blocks'}",
        f"-blocks-storage.tsdb.dir={data / 'tsdb'}",
        f"-blocks-storage.bucket-store.sync-dir={data / 'sync'}",
        *opts.cortex_flags,
    ]


def start_cortex_all_in_one(
    procs: Processes, opts: Options, scheduler: Scheduler, log: Path
) -> tuple[subprocess.Popen[bytes], int]:
    http_port, grpc_port = free_port(), free_port()
    proc = procs.start(
        [opts.cortex, *cortex_all_in_one_flags(opts, scheduler.address, http_port, grpc_port)],
        log,
        cwd=opts.workdir,
    )
    wait_until("Cortex all-in-one", lambda: http_ok(_url(http_port, "/ready")), proc, 120)

    def connected() -> bool:
        # Every replica has the frontend; the querier's workers are spread over them.
        queriers = 0.0
        for url in scheduler.metrics_urls:
            status, text = http_get(url)
            if (
                status != 200
                or gauge(text, "cortex_query_scheduler_connected_frontend_clients") < 1
            ):
                return False
            queriers += gauge(text, "cortex_query_scheduler_connected_querier_clients")
        return queriers >= opts.querier_concurrency

    wait_until("frontend and querier connected to the scheduler", connected, scheduler.procs[0], 60)

    def answers() -> bool:
        url = _url(http_port, f"{PREFIX}/api/v1/query?" + urllib.parse.urlencode({"query": "up"}))
        return all(http_get(url, {"X-Scope-OrgID": t})[0] == 200 for t in TENANTS)

    wait_until("a query through the scheduler", answers, proc, 60)
    return proc, http_port


def _url(port: int, path: str) -> str:
    return f"http://127.0.0.1:{port}{path}"


# --- load ----------------------------------------------------------------------

WRK_LUA = """
local tenants = {TENANTS}
local paths = {PATHS}
local counter = 0
request = function()
  counter = counter + 1
  local tenant = tenants[(counter % #tenants) + 1]
  local path = paths[(math.floor(counter / #tenants) % #paths) + 1]
  return wrk.format("GET", path, {["X-Scope-OrgID"] = tenant})
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRKRESULT %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f\\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
"""


def write_lua(path: Path) -> None:
    three_days_ago = int(time.time()) - 3 * 86400
    paths = []
    for i, query in enumerate(QUERIES):
        params = {"query": query}
        if i == 1:
            params["time"] = str(three_days_ago)
        paths.append(f"{PREFIX}/api/v1/query?{urllib.parse.urlencode(params)}")
    lua = WRK_LUA.replace("{TENANTS}", "{" + ", ".join(json.dumps(t) for t in TENANTS) + "}")
    lua = lua.replace("{PATHS}", "{" + ", ".join(json.dumps(p) for p in paths) + "}")
    path.write_text(lua)


def run_wrk(opts: Options, port: int, threads: int, connections: int, seconds: int) -> WrkResult:
    argv = [
        opts.wrk,
        f"-t{threads}",
        f"-c{connections}",
        f"-d{seconds}s",
        "--timeout=10s",
        "-s",
        str(opts.workdir / "queries.lua"),
        _url(port, "/"),
    ]
    out = subprocess.run(
        argv, capture_output=True, text=True, timeout=seconds + 60, stdin=subprocess.DEVNULL
    )
    line = next((x for x in out.stdout.splitlines() if x.startswith("WRKRESULT ")), None)
    if line is None:
        raise RuntimeError(f"wrk gave no result: {out.stdout}\n{out.stderr}")
    n, duration_us, p50, p99, status, connect, read, write, timeout = (
        float(x) for x in line.split()[1:]
    )
    return WrkResult(
        requests=int(n),
        seconds=duration_us / 1e6,
        p50_ms=p50 / 1e3,
        p99_ms=p99 / 1e3,
        non_2xx=int(status),
        socket_errors=int(connect + read + write + timeout),
    )


@contextlib.contextmanager
def py_spy(opts: Options, pid: int, seconds: int) -> Iterator[None]:
    """py-spy record of `pid` while the block runs, and each thread's CPU meanwhile.

    Collapsed stacks (`--format raw`) per thread id, native frames included,
    idle samples kept (py-spy's idle detection misses native waits), so the
    file gives wall-clock shares; the per-thread CPU printed here says how
    busy each thread was.
    """
    assert opts.profile is not None
    argv = [opts.py_spy, "record", "--pid", str(pid), "--duration", str(seconds)]
    argv += ["--rate", "100", "--format", "raw", "--threads", "--native", "--idle"]
    argv += ["-o", opts.profile]
    Path(opts.profile).parent.mkdir(parents=True, exist_ok=True)
    spy = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True)
    before = thread_cpu_seconds(pid)
    started = time.monotonic()
    try:
        yield
    finally:
        after, elapsed = thread_cpu_seconds(pid), time.monotonic() - started
        used = {
            tid: (name, cpu - before.get(tid, (name, 0.0))[1]) for tid, (name, cpu) in after.items()
        }
        total = sum(cpu for _, cpu in used.values()) or 1.0
        print(f"our scheduler's threads over the profiled {elapsed:.1f}s (CPU s, share):")
        for tid, (name, cpu) in sorted(used.items(), key=lambda x: -x[1][1]):
            if cpu > 0:
                print(f"  thread {tid} ({name}): {cpu:.2f} s = {100 * cpu / total:.1f}%")
        try:
            spy.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(spy.pid, signal.SIGINT)
            spy.wait(timeout=10)
        if spy.returncode == 0:
            print(f"py-spy profile of our scheduler written to {opts.profile}", flush=True)
        else:
            print(f"py-spy failed ({spy.returncode}); no profile", flush=True)


def run_phase(procs: Processes, opts: Options, kind: str, index: int) -> PhaseResult:
    logs = opts.workdir / f"phase-{index}-{kind}"
    logs.mkdir()
    if kind == "cortex":
        scheduler = start_cortex_scheduler(
            procs.start,
            wait_until,
            opts.cortex,
            opts.workdir,
            logs,
            opts.replicas,
            opts.scheduler_host,
        )
    else:
        scheduler = start_our_scheduler(
            procs.start,
            wait_until,
            opts.project,
            opts.workdir,
            logs,
            opts.replicas,
            opts.scheduler_host,
            extra=opts.variants.get(kind),
            cluster=opts.cluster,
        )
    cortex, http_port = None, 0
    try:
        cortex, http_port = start_cortex_all_in_one(procs, opts, scheduler, logs / "cortex.log")
        run_wrk(opts, http_port, opts.threads, opts.connections, 2)  # warm-up, not counted
        profile = opts.profile is not None and kind == "ours" and not opts.profiled
        first = scheduler.procs[0].pid
        spy = py_spy(opts, first, opts.duration) if profile else None

        def cpu() -> tuple[float, float]:
            ours = sum(group_cpu_seconds(p.pid) for p in scheduler.procs)
            return ours, group_cpu_seconds(cortex.pid)

        cpu_before = cpu()
        reported_before = [reported_cost(url) for url in scheduler.metrics_urls]
        with spy or contextlib.nullcontext():
            load = run_wrk(opts, http_port, opts.threads, opts.connections, opts.duration)
        opts.profiled = opts.profiled or profile
        cpu_after = cpu()
        memory = [group_memory_bytes(p.pid) for p in scheduler.procs]
        reported_after = [reported_cost(url) for url in scheduler.metrics_urls]
        dispatched = [dispatch_count(url) for url in scheduler.metrics_urls]
        light = run_wrk(opts, http_port, 1, 1, opts.light_duration)
    finally:
        if cortex is not None:
            procs.stop(cortex)
        for proc in scheduler.procs:
            procs.stop(proc)
    return PhaseResult(
        kind,
        load,
        light,
        scheduler_cpu=cpu_after[0] - cpu_before[0],
        cortex_cpu=cpu_after[1] - cpu_before[1],
        per_replica=dispatched if len(dispatched) > 1 else [],
        reported_us=reported_us(reported_before, reported_after),
        scheduler_rss=sum(rss for rss, _ in memory),
        scheduler_peak=sum(peak for _, peak in memory),
    )
