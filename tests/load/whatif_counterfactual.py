"""Does the simulator predict what a config change then really does? Checked end to end.

`python -m tests.load.whatif_counterfactual [--changes priority,reserve,limit]
[--rate 10] [--slowdown 8] [--window 240] [--seeds 1,2] [--port-base 45010]
[--start-from proposal|live|proposal,live] [--out DIR]`

For each change, in parallel, one real Daphne (loadgen.daphne_process) on
its own database and pinned ports (`--port-base` + 10 x i: HTTP, + 1: gRPC)
with the demo config, the demo load (`manage.py loadgen`: websocket and
Cortex gRPC frontends and queriers) at `--rate` requests per second and
store-gateway work `--slowdown` times slower (`manage.py loadgen_slowdown`),
so queues build. After the first window has been recorded the script asks
`POST /api/v1/simulate/` (`workload` recent, one answer per seed) what the
change would do, saves the change as an operator would (`PUT
/api/v1/tenants/<id>/`), waits for a fresh window under the same load (its
warm-up minute and the backlog the old config left included) and reads what
the scheduler measured in it (`GET /api/v1/recording/`'s `measured`). The
replays warm up as the server's capture chose (a minute, or back to where
the window's backlog began, up to ten: printed with the windows).

It prints, per priority and per component: the waits measured before the
change, the `live` replay of that window (how faithful the replay of the
config that ran is), the `proposed` prediction and the waits measured after
the change, with prediction / measured ratios; with `--start-from` one
prediction per `knobs.start_from` asked (`proposal`, the default: the
proposal's own backlog, as if applied long ago; `live`: the live backlog
with the proposal applied at the window's start, as the save does), each
against the same measured window; and the 429s per 1,000
arriving requests (the windows differ in how many requests arrive, which
no config decides). A NOTE follows when the window after the change served a request that
had waited longer than the time since the change: the old config's
backlog may still be in it. With `--history N` each window is also
fetched N seconds longer and the after window is replayed here under its
own config twice, from its own warm-up and from N seconds further back
(`with_history`), beside what was measured. With `--out` it writes each
change's recordings and simulate answers as JSON, to replay offline.

Not a test: it takes about 2 x (window + 140) seconds and its figures are
from one draw of the load. It stops everything it started.
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadgen.daphne_process import DaphneProcess
from scheduler_core.whatif import run_whatif
from scheduler_core.whatif_model import Knobs
from scheduler_core.whatif_workload import recent_workload
from tests.load.record_change_windows import changed_blocks, pin_ports
from tests.load.record_demo_window import fetch_recording, start_demo, stop_demo
from tests.scheduler_core.whatif_measured import configs_of

__all__ = ["CHANGES", "Change", "main", "with_history"]


@dataclass(frozen=True, slots=True)
class Change:
    """A config change, as new values at dotted paths inside tenants' blocks."""

    what: str
    blocks: dict[str, dict[str, Any]]


# Each from the demo config (api/management/commands/seed_demo_config.py).
CHANGES: dict[str, Change] = {
    # A class of queries moves up: team-b's range queries over 24 h or more
    # go from priority 1 (below its default 2) to 4, above its instant
    # queries' 3, so they may use the queriers reserved for priority >= 3.
    "priority": Change(
        "team-b's >= 24h range queries from priority 1 to 4",
        {"team-b": {"query_priority.priorities.1.priority": 4}},
    ),
    # The README's fix: one querier of team-b's three reserved for its
    # instant queries instead of two, so its range queries drain.
    "reserve": Change(
        "team-b reserves 1 querier (was 0.5 of 3 = 2) for priority >= 3",
        {"team-b": {"query_priority.priorities.0.reserved_queriers": 1}},
    ),
    # A tenant squeezed: team-c onto one querier and 10 outstanding
    # requests, less than its load needs, so it queues and is refused.
    "limit": Change(
        "team-c: 1 querier (was 2), at most 10 outstanding requests (was 100)",
        {"team-c": {"max_queriers_per_tenant": 1, "max_outstanding_requests_per_tenant": 10}},
    ),
}
# Seconds after a change before the window after it is read: the window
# spans up to a minute more than asked (it starts at a whole minute), the
# minute before it is its shortest warm-up, and the backlog the old config
# left drains in some 20 s. A longer warm-up (a class starved for longer
# than a minute) reaches back before the change and replays that time
# under the new config.
SETTLE_SECONDS = 140
# `knobs.start_from` (docs/api.md): the server's default, and every value.
DEFAULT_START = "proposal"
STARTS = ("proposal", "live")


def with_history(short: dict[str, Any], long: dict[str, Any]) -> dict[str, Any]:
    """`short`'s window, replayed from `long`'s start: its extra time as a longer warm-up.

    Both fetched at the same moment, so they end at the same bucket; the
    waits measured are `short`'s (those of its window).
    """
    shift = long["window_seconds"] - short["window_seconds"]
    out = copy.deepcopy(long)
    for key in out["keys"]:
        key["counts"] = [
            [offset - shift // out["bucket_seconds"], n] for offset, n in key["counts"]
        ]
        for item in (*key["samples"], *key.get("actors", ())):
            item["epoch"] -= shift
    out["service_seconds"] = {
        component: [[start - shift, hist] for start, hist in rows]
        for component, rows in long["service_seconds"].items()
    }
    out["warmup_seconds"] = long["warmup_seconds"] + shift
    out["window_seconds"] = short["window_seconds"]
    out["measured"] = short["measured"]
    return out


def _call(
    server: DaphneProcess, token: str, method: str, path: str, body: Any = None
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    if method == "PUT":
        headers["If-Match"] = "*"
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers=headers,
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        return dict(json.loads(response.read()))


def _start_load(server: DaphneProcess, rate: float, slowdown: float) -> subprocess.Popen[bytes]:
    """The demo config and the seeded demo load at `rate`, store-gateway `slowdown` x slower."""
    server.manage("loadgen_slowdown", str(slowdown))
    return start_demo(server, "--rate", str(rate))


@dataclass(slots=True)
class Run:
    """One change's run: its recordings and simulate answers (one per seed)."""

    name: str
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    # Seconds from the change to the after window's first instant.
    after_start: float = 0.0
    # With --history: the same windows' recordings `history` seconds longer.
    before_long: dict[str, Any] | None = None
    after_long: dict[str, Any] | None = None
    answers: list[dict[str, Any]] | None = None
    # Per `knobs.start_from` asked (--start-from), its answers; `answers` is the first's.
    predictions: dict[str, list[dict[str, Any]]] | None = None
    error: str | None = None


def run_change(run: Run, args: argparse.Namespace, http_port: int) -> None:
    """Record, predict, apply, record again (see the module doc); fills `run`."""
    server = DaphneProcess(grpc=True, extra_env={"SIMULATION_TIME_LIMIT_SECONDS": "600"})
    pin_ports(server, http_port, http_port + 1)
    loadgen = None
    try:
        server.start()
        viewer = server.issue_token("viewer", "counterfactual")
        editor = server.issue_token("editor", "counterfactual-editor")
        loadgen = _start_load(server, args.rate, args.slowdown)
        time.sleep(args.window + SETTLE_SECONDS)
        run.before = dict(fetch_recording(server, viewer, args.window, loadgen))
        if args.history:
            run.before_long = dict(
                fetch_recording(server, viewer, args.window + args.history, loadgen)
            )
        blocks = changed_blocks(run.before["config"]["tenants"], CHANGES[run.name].blocks)
        workload = {"kind": "recent", "window_seconds": args.window}
        body = {"workload": workload, "proposed": {"tenants": blocks}}
        run.predictions = {
            # The default is left out of the body: the request as it was before the knob.
            how: [
                _call(
                    server,
                    viewer,
                    "POST",
                    "simulate/",
                    {**body, "seed": seed}
                    | ({} if how == DEFAULT_START else {"knobs": {"start_from": how}}),
                )
                for seed in args.seeds
            ]
            for how in args.start_from
        }
        run.answers = run.predictions[args.start_from[0]]
        for tenant, block in blocks.items():
            _call(server, editor, "PUT", f"tenants/{tenant}/", block)
        changed = time.monotonic()
        time.sleep(args.window + SETTLE_SECONDS)
        run.after = dict(fetch_recording(server, viewer, args.window, loadgen))
        run.after_start = time.monotonic() - changed - run.after["window_seconds"]
        if args.history:
            run.after_long = dict(
                fetch_recording(server, viewer, args.window + args.history, loadgen)
            )
    except Exception as exc:  # reported beside the other changes' figures
        run.error = f"{type(exc).__name__}: {exc}"
    finally:
        stop_demo(server, loadgen)


def _arrivals(measured: dict[str, Any]) -> int:
    return sum(c["count"] for c in measured["by_component"].values()) + measured["rejected"]


def _pair(summary: dict[str, Any] | None) -> str:
    if summary is None:
        return f"{'-':>15}"
    return f"{summary['mean']:7.2f}/{summary['p99']:7.2f}"


def _ratio(predicted: dict[str, Any] | None, measured: dict[str, Any] | None) -> str:
    if predicted is None or measured is None:
        return f"{'-':>11}"

    def one(key: str) -> str:
        return f"{predicted[key] / measured[key]:5.2f}" if measured[key] > 0 else "    -"

    return f"{one('mean')}/{one('p99')}"


def _range(answers: list[dict[str, Any]], side: str, pick: Callable[[dict[str, Any]], Any]) -> str:
    """Seeds' means and p99s as `low-high` (one seed: its figure)."""
    values = [pick(a[side]) for a in answers]
    if any(v is None for v in values):
        return f"{'-':>23}"
    means, p99s = [v["mean"] for v in values], [v["p99"] for v in values]
    return f"{min(means):5.2f}-{max(means):5.2f}/{min(p99s):5.2f}-{max(p99s):5.2f}"


def report(run: Run) -> None:
    change = CHANGES[run.name]
    print(f"\n== {run.name}: {change.what}")
    if run.error or run.before is None or run.after is None or not run.predictions:
        print(f"   failed: {run.error}")
        return
    for how, answers in run.predictions.items():
        report_prediction(run, how, answers)
    # A request dispatched in the after window that waited longer than the
    # window began after the change may have been queued under the old
    # config: its backlog, not the new config's steady state.
    after = run.after["measured"]
    longest = max(c["max"] for c in after["by_component"].values())
    if longest > run.after_start:
        print(
            f"   NOTE: the after window began {run.after_start:.0f} s after the change and "
            f"served a request that had waited {longest:.0f} s: it may still hold the old "
            "config's backlog, which only a prediction from the live backlog models"
        )


def report_prediction(run: Run, how: str, answers: list[dict[str, Any]]) -> None:
    """One `knobs.start_from`'s predictions beside what was measured (see the module doc)."""
    assert run.before is not None and run.after is not None
    print(f"   -- predicted with knobs.start_from {how}")
    before, after = run.before["measured"], run.after["measured"]
    per_k_before, per_k_after = 1000 / _arrivals(before), 1000 / _arrivals(after)
    print(
        f"   windows: {run.before['window_seconds']} s ({_arrivals(before)} arrivals) and "
        f"{run.after['window_seconds']} s ({_arrivals(after)}); warm-ups "
        f"{run.before['warmup_seconds']} and {run.after['warmup_seconds']} s; seeds "
        f"{[a['workload']['seed'] for a in answers]}; waits mean/p99 in seconds"
    )
    print(
        f"   {'':28} {'measured before':>15} {'live replay':>23} {'predicted':>23} "
        f"{'measured after':>15} {'pred/meas (seed 1)':>18}"
    )
    for group in ("by_priority", "by_component"):
        names = sorted(
            set(before[group]) | set(after[group]) | set(answers[0]["proposed"][group]),
            key=lambda n: (-int(n), "") if group == "by_priority" else (0, n),
        )
        for name in names:
            label = f"{group[3:]} {name}"
            real = after[group].get(name)
            predicted = answers[0]["proposed"][group].get(name)
            counts = f"n={real['count'] if real else 0}"
            print(
                f"   {label:28} {_pair(before[group].get(name))} "
                f"{_range(answers, 'live', lambda r, g=group, n=name: r[g].get(n))} "
                f"{_range(answers, 'proposed', lambda r, g=group, n=name: r[g].get(n))} "
                f"{_pair(real)} {_ratio(predicted, real):>11} {counts}"
            )
    for side in ("live", "proposed"):
        refused = [a[side]["rejected"] for a in answers]
        offered = [a[side]["requests"]["offered"] for a in answers]
        per_k = [1000 * r["total"] / o for r, o in zip(refused, offered, strict=True)]
        print(
            f"   429s per 1,000 arrivals, {side} replay: "
            f"{', '.join(f'{k:.1f}' for k in per_k)} (by tenant, seed 1: "
            f"{refused[0]['by_tenant']})"
        )
    print(
        f"   429s per 1,000 arrivals, measured before: {before['rejected'] * per_k_before:.1f}, "
        f"after: {after['rejected'] * per_k_after:.1f}"
    )


def report_history(run: Run, seed: int) -> None:
    """The after window under its own config, from its own warm-up and from further back.

    Replayed here, not by the server. Where the longer warm-up agrees with
    what was measured and the capture's does not, the window held a backlog
    older than the capture reached: the old config's, or a class starved
    for longer than ten minutes.
    """
    if run.after is None or run.after_long is None:
        return
    configs = configs_of(run.after["config"])
    extended = with_history(run.after, run.after_long)
    sides = [
        (
            f"{recording['warmup_seconds']} s",
            run_whatif(recent_workload(recording, Knobs(), seed), configs, configs, seed=seed)[
                "live"
            ],
        )
        for recording in (run.after, extended)
    ]
    measured = run.after["measured"]["by_priority"]
    print(f"   the after window under its own config (seed {seed}), by warm-up, mean/p99:")
    for level in sorted(measured, key=int, reverse=True):
        replays = " ".join(
            f"{label} {_pair(result['by_priority'].get(level))}" for label, result in sides
        )
        print(f"     priority {level:>3}: {replays}  measured {_pair(measured[level])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.load.whatif_counterfactual")
    parser.add_argument("--changes", default=",".join(CHANGES), help="comma-separated names")
    parser.add_argument("--rate", type=float, default=10.0, help="requests per second")
    parser.add_argument("--slowdown", type=float, default=8.0, help="store-gateway factor")
    parser.add_argument("--window", type=int, default=240, help="seconds of each window")
    parser.add_argument("--seeds", default="1,2", help="simulation seeds, comma-separated")
    parser.add_argument("--port-base", type=int, default=45010, help="first change's HTTP port")
    parser.add_argument("--out", type=Path, help="write recordings and answers here")
    parser.add_argument(
        "--history",
        type=int,
        default=0,
        help="also fetch each window this many seconds longer, replayed with a longer warm-up",
    )
    parser.add_argument(
        "--start-from",
        default=DEFAULT_START,
        help="knobs.start_from of the predictions, comma-separated (proposal: the proposal's "
        "own backlog, as if applied long ago; live: the live backlog, applied now)",
    )
    args = parser.parse_args(argv)
    args.start_from = args.start_from.split(",")
    if not args.start_from or set(args.start_from) - set(STARTS):
        parser.error(f"--start-from takes {', '.join(STARTS)}, comma-separated")
    names = args.changes.split(",")
    unknown = set(names) - set(CHANGES)
    if unknown:
        parser.error(f"unknown changes {sorted(unknown)}; known: {sorted(CHANGES)}")
    args.seeds = [int(s) for s in args.seeds.split(",")]
    runs = [Run(name) for name in names]
    threads = [
        threading.Thread(target=run_change, args=(run, args, args.port_base + 10 * i))
        for i, run in enumerate(runs)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(
        f"rate {args.rate:g} req/s, store-gateway slowdown {args.slowdown:g}x, "
        f"predictions starting from {' and '.join(args.start_from)}"
    )
    for run in runs:
        report(run)
        report_history(run, args.seeds[0])
        if args.out is not None and run.before is not None and run.after is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            for part in ("before", "after", "answers", "before_long", "after_long"):
                # `answers` stays the first --start-from's, as the file was before.
                path = args.out / f"{run.name}_{part}.json"
                path.write_text(json.dumps(getattr(run, part), sort_keys=True))
    return 1 if any(run.error for run in runs) else 0


if __name__ == "__main__":
    raise SystemExit(main())
