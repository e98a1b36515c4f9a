"""The websocket consumers' own work per request, in one process, scheduler vs relay.

Run `python -m tests.load.ws_consumers_bench` from the repository root.
`manage.py loadtest` measures the whole server, where Daphne's framing and
the machine's noise (the clients share its two cores) move every figure by
tens of percent between runs; that is too coarse to tell whether a change
to the scheduler's path saved a few microseconds. Here the real consumers
(`FrontendConsumer`, `QuerierConsumer`, and the loadtest's relay pair) run
on one event loop with no socket: each `send` only keeps the text frame it
would write, and the benchmark plays the frontend and the querier by
feeding the consumers the frames they would receive. Both sides do the same
client work, so the difference is what the scheduler's path costs over the
relay's (parsing and validation, classification, admission records, the
queue, its observers, the worker tasks).

Phases alternate relay, scheduler, relay, scheduler... (`--rounds`), each
of `--requests` requests in batches (closed loop, `--batch` outstanding,
with 200 idle workers as in the loadtest); it prints the CPU microseconds
(thread time) per request of each phase, the medians, and their difference.
The in-process figures are about half what the same code costs inside the
loaded server (see docs/performance.md, issue 17 session 6).

`--ablate` then runs the scheduler again with parts of its work taken off
(the runtime's observers; admission records, i.e. rule hit counts and the
traffic sample; classification, memoized per query text), one at a time and
all together, alternating with the whole path: what each part costs, and
how far above the relay the path stays without any of them. The parts are
taken off by swapping them out in this process only; nothing served changes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from tests.load.in_process_django import setup_django

__all__ = ["main"]

QUERIES = (
    "sum by (job) (rate(http_requests_total{job=~'api.*'}[5m]))",
    "histogram_quantile(0.99, sum by (le) (rate(request_duration_seconds_bucket[5m])))",
    "count(up == 0)",
)


class _Pair:
    """A frontend and a querier consumer with their frames captured, not written.

    The querier's frames are kept (the benchmark answers them); the
    frontend's are counted.
    """

    def __init__(self, frontend: Any, querier: Any) -> None:
        self.frontend, self.querier = frontend, querier
        self.to_querier: list[str] = []
        self.to_frontend = 0
        for consumer, sink in ((frontend, self._frontend_frame), (querier, self.to_querier.append)):
            consumer.scope = {"type": "websocket", "headers": [], "query_string": b""}
            consumer.connection_id = f"bench-{id(consumer)}"
            consumer.send = _capture(sink)

    def _frontend_frame(self, text: str) -> None:
        self.to_frontend += 1

    async def open(self, workers: int) -> None:
        await self.frontend.opened()
        await self.querier.opened()
        hello = {"type": "hello", "querier_id": "bench-q", "workers": workers}
        await self.querier.receive(text_data=json.dumps(hello))
        for _ in range(3):
            await asyncio.sleep(0)  # workers start waiting
        self.to_querier.clear()

    async def close(self) -> None:
        await self.frontend.disconnect(1000)
        await self.querier.disconnect(1000)


def _capture(sink: Callable[[str], None]) -> Callable[..., Any]:
    async def send(text_data: str | None = None, **_: Any) -> None:
        if text_data is not None:
            sink(text_data)

    return send


async def _phase(pair: _Pair, frames: list[str], batch: int) -> float:
    """Thread-CPU microseconds per request for every frame of `frames`."""
    answered = 0
    began = time.thread_time()
    for first in range(0, len(frames), batch):
        for text in frames[first : first + batch]:
            await pair.frontend.receive(text_data=text)
        for _ in range(3):
            await asyncio.sleep(0)  # dispatched workers send their requests
        sent, pair.to_querier[:] = list(pair.to_querier), []
        for text in sent:
            request = json.loads(text)
            result = {"type": "result", "worker": request["worker"], "id": request["id"]}
            await pair.querier.receive(text_data=json.dumps({**result, "status": 200}))
        for _ in range(3):
            await asyncio.sleep(0)  # results reach the frontend
        answered += len(sent)
    took = time.thread_time() - began
    if answered != len(frames):
        raise SystemExit(f"only {answered} of {len(frames)} requests were answered")
    if pair.to_frontend != 2 * answered:  # the `enqueued` ack and the result of each
        raise SystemExit(f"{pair.to_frontend} frames reached the frontend for {answered}")
    return took / answered * 1e6


def _frames(n: int, offset: int) -> list[str]:
    now = time.time()
    now -= now % 60  # step-aligned, as Grafana sends and the loadtest's default
    return [
        json.dumps(
            {
                "type": "enqueue",
                "id": offset + i,
                "tenant": f"tenant-{i % 10}",
                "query": QUERIES[i % len(QUERIES)],
                "start": now - 3600,
                "end": now,
                "step": 60,
                "headers": {"X-Loadtest-Id": f"0:{offset + i}"},
            }
        )
        for i in range(n)
    ]


# What `--ablate` can take off the scheduler's path, each alone and all at once.
PARTS = ("observers", "admission records", "classification")


@contextlib.contextmanager
def _without(host: Any, parts: tuple[str, ...]) -> Iterator[None]:
    """The scheduler's path with `parts` swapped out, put back on exit."""
    from api.wire.consumers import frontend

    fan = host.runtime.observer
    calls = fan._calls  # noqa: SLF001 - the fan-out's hook lists, emptied and refilled
    saved = {hook: list(methods) for hook, methods in calls.items()}
    record, classify = host.admission_log.record, frontend.classify
    memo: dict[str, Any] = {}

    def memoized(**fields: Any) -> Any:
        found = memo.get(fields["query"])
        if found is None:
            found = memo[fields["query"]] = classify(**fields)
        return found

    if "observers" in parts:
        for methods in calls.values():
            methods.clear()
    if "admission records" in parts:
        host.admission_log.record = lambda *args: None
    if "classification" in parts:
        frontend.classify = memoized
    try:
        yield
    finally:
        for hook, methods in saved.items():
            calls[hook][:] = methods
        host.admission_log.record, frontend.classify = record, classify


async def _ablate(args: argparse.Namespace, relay: float) -> None:
    from api.wire import runtime_host
    from api.wire.consumers.frontend import FrontendConsumer
    from api.wire.consumers.querier import QuerierConsumer

    host = await runtime_host.ensure_started()
    variants = [(), *((part,) for part in PARTS), PARTS]
    costs: dict[tuple[str, ...], list[float]] = {v: [] for v in variants}
    offset = 10 * args.rounds * args.requests  # fresh client ids
    for _ in range(args.rounds):
        for variant in variants:
            pair = _Pair(FrontendConsumer(), QuerierConsumer())
            await pair.open(args.workers)
            offset += args.requests
            with _without(host, variant):
                costs[variant].append(
                    await _phase(pair, _frames(args.requests, offset), args.batch)
                )
            await pair.close()
    whole = statistics.median(costs[()])
    print(f"\nablation (median of {args.rounds}, us CPU per request in-process):")
    print(f"  whole path {whole:.1f} us")
    for variant in variants[1:]:
        cost = statistics.median(costs[variant])
        name = "all three" if variant == PARTS else variant[0]
        print(
            f"  without {name}: {cost:.1f} us ({whole - cost:.1f} us less); "
            f"{cost - relay:.1f} us above the relay's {relay:.1f} us"
        )


async def _run(args: argparse.Namespace) -> tuple[list[float], list[float]]:
    from api.wire import metrics, runtime_host
    from api.wire.consumers.frontend import FrontendConsumer
    from api.wire.consumers.querier import QuerierConsumer
    from api.wire.consumers.relay import RelayFrontendConsumer, RelayQuerierConsumer

    assert metrics.REGISTRY is not None  # imported: its observer is on the runtime, as served
    await runtime_host.ensure_started()
    relay: list[float] = []
    scheduler: list[float] = []
    sides = [
        ((RelayFrontendConsumer, RelayQuerierConsumer), relay),
        ((FrontendConsumer, QuerierConsumer), scheduler),
    ]
    if args.only:
        sides = [sides[args.only == "scheduler"]]
    for round_ in range(args.rounds):
        for kinds, out in sides:
            pair = _Pair(kinds[0](), kinds[1]())
            await pair.open(args.workers)
            frames = _frames(args.requests, round_ * args.requests)
            out.append(await _phase(pair, frames, args.batch))
            await pair.close()
            print(
                f"round {round_ + 1} {'relay' if out is relay else 'scheduler'}: "
                f"{out[-1]:.1f} us CPU per request",
                flush=True,
            )
    if args.ablate and relay:
        await _ablate(args, statistics.median(relay))
    await runtime_host.shutdown(drain_timeout=0)
    return relay, scheduler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000, help="per phase")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=20, help="outstanding requests")
    parser.add_argument("--workers", type=int, default=200, help="querier workers")
    parser.add_argument(
        "--only", choices=("relay", "scheduler"), help="one side only (to profile it)"
    )
    parser.add_argument(
        "--ablate", action="store_true", help="then what each part of the path costs"
    )
    args = parser.parse_args()
    setup_django("ws-bench-")
    relay, scheduler = asyncio.run(_run(args))
    if args.only:
        return
    r, s = statistics.median(relay), statistics.median(scheduler)
    print(
        f"\nmedian CPU per request in-process: relay {r:.1f} us, scheduler {s:.1f} us; "
        f"the scheduler's path costs {s - r:.1f} us more ({s / r:.2f}x the relay's)"
    )


if __name__ == "__main__":
    main()
