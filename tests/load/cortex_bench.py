"""Real Cortex in front of two schedulers: Cortex's own query-scheduler and ours.

Run `python -m tests.load.cortex_bench --cortex /path/to/cortex` from the
repository root with a Cortex binary (v1.15.3 for docs/performance.md; how
to build one is described there). Nothing here downloads or builds Cortex,
and CI does not run this script.

Each phase starts, on 127.0.0.1 with free ports and fresh temporary
directories:

- a scheduler: either Cortex itself with `-target=query-scheduler`, or ours
  (Daphne on `config.asgi:application` with `GRPC_PORT`, its own SQLite
  database after `migrate` and `collectstatic`, as `make serve` does);
- Cortex all-in-one (`-target=all`, which in v1.15.3 holds the
  query-frontend, querier, ingester, distributor and store-gateway but no
  scheduler), whose query-frontend and querier point at that scheduler
  (`-frontend.scheduler-address`, `-querier.scheduler-address`),
  `-auth.enabled=true` (tenants from `X-Scope-OrgID`), filesystem blocks
  storage, rings in memory.

Then `wrk` drives the query-frontend's `/prometheus/api/v1/query` with a
saturating load (three tenants in turn, four instant queries over the empty
store: each still goes frontend -> scheduler -> querier -> frontend, so the
scheduler's cost is what differs), then a light one (one connection). The
phases alternate Cortex, ours, Cortex, ours (`--rounds`), with the same
duration and connections.

Printed per phase and in total: queries/s, p50/p99 latency, errors (non-2xx
or 3xx responses, and socket errors), and CPU seconds per query of the
scheduler's processes (utime + stime from /proc, its whole process group)
and of the all-in-one Cortex, with ratios ours/Cortex from the same run,
since the machine is shared and noisy. `--profile FILE` also records our
scheduler with py-spy (collapsed stacks) during its first saturating phase;
the figures of a profiled run are not comparable.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.load.bench_processes import (
    Processes,
    free_port,
    gauge,
    group_cpu_seconds,
    http_get,
    http_ok,
    thread_cpu_seconds,
    wait_until,
)
from tests.load.cortex_cluster import (
    ScaleOut,
    Scheduler,
    hosts_lines,
    prepare_ours,
    replica_hosts,
    resolves_to_replicas,
    scale_out,
    start_cortex_scheduler,
    start_our_scheduler,
)
from tests.load.cortex_report import PhaseResult, WrkResult, phase_line, report
from tests.load.scheduler_metrics import dispatch_count, reported_cost, reported_us

__all__ = ["PhaseResult", "main"]

REPO = Path(__file__).resolve().parents[2]
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
    )


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    name, _, assignments = text.partition(":")
    env = dict(pair.split("=", 1) for pair in assignments.split(",") if "=" in pair)
    if not name or not env or name in ("cortex", "ours"):
        raise SystemExit(f"--variant {text!r}: expected LABEL:NAME=VALUE[,NAME=VALUE]")
    return name, env


def cortex_version(path: str) -> str:
    out = subprocess.run([path, "-version"], capture_output=True, text=True, timeout=30)
    go = re.search(r"go version:\s*(\S+)", out.stdout)
    version = re.search(r"version\s+(\S*)\s*\(", out.stdout)
    name = version.group(1) if version and version.group(1) else "no version stamped"
    return f"{name}, {go.group(1) if go else 'go ?'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cortex", required=True, help="path of a Cortex binary (v1.15.3)")
    parser.add_argument("--wrk", default=shutil.which("wrk") or "wrk")
    parser.add_argument("--project", type=Path, default=REPO, help="checkout whose .venv runs ours")
    parser.add_argument(
        "--duration", type=int, default=20, help="seconds of saturating load per phase"
    )
    parser.add_argument("--light-duration", type=int, default=10, help="seconds at one connection")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="Cortex-then-ours pairs (2 or more for figures worth keeping)",
    )
    parser.add_argument(
        "--querier-concurrency", type=int, default=16, help="-querier.max-concurrent (workers)"
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="LABEL:NAME=VALUE[,NAME=VALUE]",
        help="also run ours with these environment variables, as phase LABEL, every round "
        "(e.g. grpcio:GRPC_SERVER=grpcio)",
    )
    parser.add_argument(
        "--cortex-flag",
        action="append",
        default=[],
        metavar="FLAG",
        help="one more flag for the all-in-one Cortex (e.g. "
        "-querier.frontend-client.grpc-compression=gzip)",
    )
    parser.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="schedulers per phase, on 127.0.0.1..N with one gRPC port; ours share a "
        "PostgreSQL and a Redis started for the run (docs/operations.md)",
    )
    parser.add_argument(
        "--scheduler-host",
        default="query-scheduler.cortex-bench.test",
        help="with --replicas N: the name Cortex dials, which must resolve to 127.0.0.1..N",
    )
    parser.add_argument("--profile", help="py-spy collapsed stacks of ours, first phase, to FILE")
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy")
    args = parser.parse_args(argv)
    opts = Options(
        cortex=os.path.abspath(args.cortex),
        wrk=args.wrk,
        project=args.project.resolve(),
        duration=args.duration,
        light_duration=args.light_duration,
        connections=args.connections,
        threads=args.threads,
        rounds=max(1, args.rounds),
        querier_concurrency=args.querier_concurrency,
        profile=os.path.abspath(args.profile) if args.profile else None,
        py_spy=args.py_spy,
        replicas=max(1, args.replicas),
        scheduler_host=args.scheduler_host,
        variants=dict(parse_variant(v) for v in args.variant),
        cortex_flags=list(args.cortex_flag),
    )
    if opts.replicas > 1 and not resolves_to_replicas(opts.scheduler_host, opts.replicas):
        print(
            f"--replicas {opts.replicas}: {opts.scheduler_host} must resolve to "
            f"{', '.join(replica_hosts(opts.replicas))}; add to /etc/hosts:\n"
            + hosts_lines(opts.scheduler_host, opts.replicas),
            file=sys.stderr,
        )
        return 2
    # SIGTERM unwinds like Ctrl-C, so every child and the temp dir go.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    procs = Processes()
    workdir = Path(tempfile.mkdtemp(prefix="cortex-bench-"))
    opts.workdir = workdir
    results: list[PhaseResult] = []
    try:
        print(f"cortex: {opts.cortex} ({cortex_version(opts.cortex)})", flush=True)
        print(
            f"load: wrk -t{opts.threads} -c{opts.connections}, {opts.duration}s per phase "
            f"after a 2s warm-up; light load wrk -t1 -c1 {opts.light_duration}s; "
            f"tenants {', '.join(TENANTS)}; "
            f"{len(QUERIES)} instant queries over an empty store; querier "
            f"-querier.max-concurrent={opts.querier_concurrency}; all on 127.0.0.1",
            flush=True,
        )
        write_lua(workdir / "queries.lua")
        with scale_out() if opts.replicas > 1 else contextlib.nullcontext() as cluster:
            opts.cluster = cluster
            if cluster is not None:
                print(
                    f"{opts.replicas} replicas each; ours on {cluster.database_url}, "
                    f"{cluster.redis_url}",
                    flush=True,
                )
            prepare_ours(opts.project, workdir, cluster)
            for index, kind in enumerate(opts.labels() * opts.rounds, 1):
                result = run_phase(procs, opts, kind, index)
                results.append(result)
                print(phase_line(index, result), flush=True)
            procs.close()
        report(results, opts.labels()[1:], opts.rounds, opts.replicas)
    finally:
        procs.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
