"""What-if simulator speed, and what running simulations costs the live scheduler.

Run `python -m tests.load.simulate_bench` from the repository root. It prints:

- simulated requests per second of wall time: a recorded 5-minute window
  of 1,000 requests per second (a recorder fed on a fake clock: 50 tenants,
  three components, priority rules, 40 queriers x 4 workers about 80% busy)
  replayed the way `POST /api/v1/simulate/` does (recording -> `recent`
  workload -> live and proposed configs), timed from the recording to both
  results; target >= 20,000 simulated requests per second, i.e. the
  window in under 15 s;
- the dispatch rate of websocket frontends and queriers against a real
  Daphne (`loadgen.loadtest`) while simulations run back to back through
  the REST API (in the niced worker process), as a ratio to the rate
  without them, measured in the same run; target >= 0.9.

`--check` exits 1 when a target is missed. Ratios, not absolute figures:
the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import random
import threading
import time
from typing import Any

from loadgen.daphne_process import DaphneProcess
from loadgen.loadtest import PhaseSpec, run_phase
from scheduler_core.model import BOTH, INGESTER, STORE_GATEWAY, QueueConfig, Request
from scheduler_core.traffic_record import TrafficRecorder, recording_of
from scheduler_core.validation import tenant_limits_from_dict
from scheduler_core.whatif import merge_proposed, run_whatif
from scheduler_core.whatif_model import ConfigSet, Knobs
from scheduler_core.whatif_workload import recent_workload

__all__ = ["main", "synthetic_recording"]

TARGET_REQUESTS_PER_SECOND = 20_000
TARGET_DISPATCH_RATIO = 0.9
WALL = 1_700_000_000.0
_SERVICE = {INGESTER: (0.01, 0.05), STORE_GATEWAY: (0.1, 0.3), BOTH: (0.1, 0.4)}
_RULES = {
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        "priorities": [
            {"priority": 5, "reserved_queriers": 1, "query_attributes": [{"regex": "alert"}]},
            {"priority": 2, "query_attributes": [{"time_window": {"start": "2h"}}]},
        ],
    }
}


def synthetic_recording(rate: float, window: int, tenants: int, seed: int = 1) -> dict[str, Any]:
    """A recorder fed `rate` requests per second for the window and its warm-up."""
    clock = [100_000.0]
    recorder = TrafficRecorder(clock=lambda: clock[0], wall_clock=lambda: WALL + clock[0])
    rng = random.Random(seed)
    components = (INGESTER, INGESTER, STORE_GATEWAY, BOTH)
    for n in range(int(rate * (window + 180))):
        clock[0] += rng.expovariate(rate)
        component = components[n % 4]
        wall = WALL + clock[0]
        ago = 0.0 if component == INGESTER else 3 * 86400.0
        request = Request(
            id=f"r{n}",
            tenant_id=f"tenant-{rng.randrange(tenants)}",
            component=component,
            priority=0,
            query="alert_rate(x[5m])" if n % 10 == 0 else "sum(rate(http_requests_total[5m]))",
            api_type="query_range",
            start=wall - ago - 3600,
            end=wall - ago if component != BOTH else wall,
            step=60.0,
        )
        recorder.on_enqueued(request)
        recorder.on_dispatched(request, "q", 0, 0.0)
        # The result comes `service` later; the next arrival is on its own time.
        service = rng.uniform(*_SERVICE[component])
        clock[0] += service
        recorder.on_completed(request)
        clock[0] -= service
    recording = recording_of(recorder.capture(window))
    recording["fleet"] = [[f"querier-{q}", 4] for q in range(40)]
    recording["windows"] = {"query_ingesters_within": 13 * 3600.0, "query_store_after": 43200.0}
    return recording


def bench_throughput(rate: float, window: int, tenants: int) -> dict[str, float]:
    recording = synthetic_recording(rate, window, tenants)
    limits = {f"tenant-{t}": tenant_limits_from_dict(_RULES) for t in range(0, tenants, 2)}
    live = ConfigSet(QueueConfig(max_outstanding_requests_per_tenant=1000), limits)
    proposed = merge_proposed(
        live, {"layout": "component-first", "component_selection": "querier-worker-priority"}, {}
    )
    started, cpu = time.perf_counter(), time.process_time()
    workload = recent_workload(recording, Knobs(), seed=1)
    body = run_whatif(workload, live, proposed, seed=1)
    elapsed = time.perf_counter() - started
    # CPU seconds too: on a shared machine the wall clock also counts the
    # time other processes had the core.
    cpu = time.process_time() - cpu
    simulated = len(workload.times)  # per config, the warm-up included
    return {
        "requests": float(body["workload"]["requests"]),
        "simulated_per_config": float(simulated),
        "seconds": elapsed,
        "per_second": 2 * simulated / elapsed,
        "window_per_second": float(body["workload"]["requests"]) / elapsed,
        "cpu_seconds": cpu,
        "window_per_cpu_second": float(body["workload"]["requests"]) / cpu,
        "utilisation": sum(body["live"]["utilisation"].values()),
    }


def _simulate_loop(port: int, token: str, stop: threading.Event, runs: list[float]) -> None:
    """POST simulations back to back (cortex-seed, an hour: ~140,000 requests a config)."""
    body = json.dumps(
        {
            "workload": {"kind": "scenario", "name": "cortex-seed"},
            "knobs": {"duration_seconds": 3600},
            "proposed": {"settings": {"layout": "component-first"}},
        }
    ).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    while not stop.is_set():
        started = time.perf_counter()
        conn.request("POST", "/api/v1/simulate/", body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"simulate answered {response.status}")
        runs.append(time.perf_counter() - started)


def bench_dispatch(seconds: float) -> tuple[float, float, list[float]]:
    """(dispatch rate without simulations, with them back to back, the runs' times)."""
    with DaphneProcess(grpc=False) as server:
        frontend, querier = server.issue_token("frontend"), server.issue_token("querier")
        viewer = server.issue_token("viewer")
        spec = PhaseSpec(
            name="dispatch",
            frontend_url=f"{server.ws_url}/ws/frontend/",
            querier_url=f"{server.ws_url}/ws/querier/",
            frontend_token=frontend,
            querier_token=querier,
            queriers=20,
            workers=4,
            frontends=5,
            window=20,
            seconds=seconds,
        )
        quiet = asyncio.run(run_phase(spec))
        stop = threading.Event()
        runs: list[float] = []
        thread = threading.Thread(
            target=_simulate_loop, args=(server.port, viewer, stop, runs), daemon=True
        )
        thread.start()
        time.sleep(2.0)  # the worker process is spawned and busy before measuring
        busy = asyncio.run(run_phase(spec))
        stop.set()
        thread.join(timeout=120)
        if quiet.lost or busy.lost:
            raise SystemExit(f"requests lost: {quiet.lost} quiet, {busy.lost} busy")
        return quiet.throughput, busy.throughput, runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.load.simulate_bench")
    parser.add_argument("--rate", type=float, default=1000.0, help="recorded requests/s")
    parser.add_argument("--window", type=int, default=300)
    parser.add_argument("--tenants", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0, help="each dispatch phase")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    missed = []
    figures = bench_throughput(args.rate, args.window, args.tenants)
    print(
        f"simulator: a {args.window} s window at {args.rate:g} req/s "
        f"({figures['requests']:.0f} requests measured, {figures['simulated_per_config']:.0f} "
        f"simulated per config with the warm-up), live + proposed in "
        f"{figures['seconds']:.1f} s = {figures['per_second']:,.0f} simulated requests/s, "
        f"{figures['window_per_second']:,.0f} window requests/s for both configs "
        f"(target >= {TARGET_REQUESTS_PER_SECOND:,}: the window in under 15 s); live "
        f"utilisation {figures['utilisation']:.0%}"
    )
    print(
        f"  the same run took {figures['cpu_seconds']:.1f} s of CPU: "
        f"{figures['window_per_cpu_second']:,.0f} window requests per CPU second"
    )
    if figures["window_per_second"] < TARGET_REQUESTS_PER_SECOND:
        missed.append("simulated requests per second")
    quiet, busy, runs = bench_dispatch(args.seconds)
    ratio = busy / quiet if quiet else 0.0
    print(
        f"dispatch rate: {quiet:.0f} req/s without simulations, {busy:.0f} req/s with "
        f"{len(runs)} simulations back to back = {ratio:.2f}x (target >= {TARGET_DISPATCH_RATIO})"
    )
    if runs:
        low, high = min(runs), max(runs)
        print(f"  each simulation (cortex-seed, 3600 s, two configs) took {low:.1f}-{high:.1f} s")
    if ratio < TARGET_DISPATCH_RATIO:
        missed.append("dispatch ratio during simulations")
    if missed:
        print("MISSED: " + ", ".join(missed))
    return 1 if missed and args.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
