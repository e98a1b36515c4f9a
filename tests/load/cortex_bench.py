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
and of the all-in-one Cortex, and the scheduler's memory (VmRSS right
after the saturating window, and its processes' peak VmHWM), with ratios
ours/Cortex from the same run, since the machine is shared and noisy.
`--profile FILE` also records our scheduler with py-spy (collapsed stacks)
during its first saturating phase; the figures of a profiled run are not
comparable.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.load.bench_processes import Processes
from tests.load.cortex_cluster import (
    hosts_lines,
    prepare_ours,
    replica_hosts,
    resolves_to_replicas,
    scale_out,
)
from tests.load.cortex_phase import QUERIES, TENANTS, Options, run_phase, write_lua
from tests.load.cortex_report import PhaseResult, phase_line, report

__all__ = ["PhaseResult", "main"]

REPO = Path(__file__).resolve().parents[2]


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
        "(e.g. grpcio:GRPC_SERVER=grpcio); PYTHON=PATH runs it on that interpreter instead "
        "(a virtualenv's python with the project's dependencies installed); PROJECT=PATH runs "
        "that checkout's code (e.g. start:PROJECT=/tmp/qi-start, a worktree of an earlier "
        "commit; same migrations)",
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
    # The project's virtualenv has py-spy whether or not it is on PATH.
    beside = Path(sys.executable).with_name("py-spy")
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or str(beside))
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
