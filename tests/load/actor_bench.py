"""Actor sub-queues in the core benchmark: idle actors must cost a dequeue nothing.

Printed by `python -m tests.load.core_bench` after its own figures (or alone:
`python -m tests.load.actor_bench`). The path is `core_bench.PairBench`'s
(1 querier x 4 workers, steady state, 2 requests per tenant), with every
request carrying an actor path (`("users", "u<k>")`, 8 actors per tenant),
measured four ways in turn inside every repeat: no actor paths at all (the
queue's fused one-priority fast path), two priorities and no actor paths
(the generic walk every non-plain leaf takes, which actor leaves take too),
actor paths, and actor paths after 100,000 more actors of one tenant each
queued a request and had it cancelled (so they are idle: pruned at once,
nothing of them is left). The target is the last over the third, <= 1.1x.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from scheduler_core.model import ComponentSelection, Layout, Request
from tests.load.core_bench import LAYOUTS, PairBench
from tests.load.core_sizes import untimed_gc

__all__ = [
    "ActorPairBench",
    "ActorResult",
    "TwoPriorityBench",
    "format_actors",
    "main",
    "measure_actors",
]

TARGET = 1.1
ACTORS_PER_TENANT = 8


class TwoPriorityBench(PairBench):
    """`PairBench` whose requests alternate two priorities: the generic dequeue walk."""

    def _requests(self, n: int) -> list[Request]:
        out = super()._requests(n)
        for request in out:
            request.priority = int(request.id[1:]) // self.tenants % 2
        return out


class ActorPairBench(PairBench):
    """`PairBench` whose requests carry actor paths, optionally after idle actors."""

    def __init__(
        self,
        layout: Layout,
        selection: ComponentSelection,
        tenants: int,
        *,
        actors: int = ACTORS_PER_TENANT,
        idle_actors: int = 0,
    ) -> None:
        self.actors = actors
        super().__init__(layout, selection, tenants)
        if idle_actors:
            self._idle_actors(idle_actors)

    def _requests(self, n: int) -> list[Request]:
        out = super()._requests(n)
        if self.actors:
            for request in out:
                serial = int(request.id[1:])
                request.actor_path = ("users", f"u{serial // self.tenants % self.actors}")
        return out

    def _idle_actors(self, count: int) -> None:
        """`count` more actors of tenant-0: each queued once, then cancelled."""
        queue = self.queue
        for k in range(count):
            rid = f"idle-{k}"
            queue.enqueue(
                Request(
                    id=rid, tenant_id="tenant-0", component="ingester", actor_path=("idle", f"a{k}")
                )  # fmt: skip
            )
            queue.cancel(rid)


@dataclass(frozen=True, slots=True)
class ActorResult:
    """Seconds per enqueue+dequeue pair, by layout label and kind."""

    tenants: int
    idle_actors: int
    pair: dict[str, dict[str, float]]  # label -> {"plain", "actors", "idle"}


def measure_actors(
    *, tenants: int = 10, idle_actors: int = 100_000, batch: int = 12_800, repeats: int = 7
) -> ActorResult:
    """Interleaved min-of-`repeats`: every kind is timed in every repeat."""
    benches: dict[tuple[str, str], PairBench] = {}
    for label, layout, selection in LAYOUTS:
        benches[(label, "plain")] = PairBench(layout, selection, tenants)
        benches[(label, "generic")] = TwoPriorityBench(layout, selection, tenants)
        benches[(label, "actors")] = ActorPairBench(layout, selection, tenants)
        benches[(label, "idle")] = ActorPairBench(
            layout, selection, tenants, idle_actors=idle_actors
        )
    best = {key: float("inf") for key in benches}
    for _ in range(repeats):
        for key, bench in benches.items():
            paired, _ = untimed_gc(partial(bench.timed_pairs, batch))
            best[key] = min(best[key], paired)
    pair: dict[str, dict[str, float]] = {}
    for (label, kind), seconds in best.items():
        pair.setdefault(label, {})[kind] = seconds
    return ActorResult(tenants, idle_actors, pair)


def format_actors(result: ActorResult) -> str:
    lines = []
    for label, kinds in result.pair.items():
        plain, generic = kinds["plain"], kinds["generic"]
        actors, idle = kinds["actors"], kinds["idle"]
        ratio = idle / actors
        verdict = "PASS" if ratio <= TARGET else "FAIL"
        lines += [
            f"[{label}] enqueue+dequeue, {result.tenants} tenants, requests with actor paths "
            f"({ACTORS_PER_TENANT} actors each): {actors * 1e9:.0f} ns = {actors / plain:.2f}x "
            f"the same traffic without actor paths ({plain * 1e9:.0f} ns, the fused fast path), "
            f"{actors / generic:.2f}x with two priorities instead ({generic * 1e9:.0f} ns, the "
            "generic walk); no target",
            f"[{label}] the same after {result.idle_actors:,} idle actors under one tenant: "
            f"{idle * 1e9:.0f} ns = {ratio:.2f}x (target <= {TARGET:g}x) {verdict}",
        ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.load.actor_bench", description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--batch", type=int, default=12_800)
    parser.add_argument("--idle-actors", type=int, default=100_000)
    args = parser.parse_args(argv)
    result = measure_actors(idle_actors=args.idle_actors, batch=args.batch, repeats=args.repeats)
    print(format_actors(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
