"""The traffic sample's trim over the byte cap: whom it takes from, in what
order, and what one record costs when thousands of tenants come and go."""

from __future__ import annotations

import math
import random
import sys
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest

from scheduler_core import traffic, trim_ring
from scheduler_core.rules import QueryInfo
from scheduler_core.traffic import ENTRY_OVERHEAD, TENANT_OVERHEAD, TrafficSample

NOW = 1_700_000_000.0


def _info(query: str) -> QueryInfo:
    return QueryInfo(query=query, api_type="query", start=NOW, end=NOW)


class _RotatingDeque:
    """The trim as a deque of tenants rotated one look at a time: the
    specification the sample must keep to, however it finds its victims."""

    def __init__(self, per_tenant: int, max_bytes: int) -> None:
        self.per_tenant, self.max_bytes = per_tenant, max_bytes
        self.tenants: dict[str, deque[tuple[str, int]]] = {}
        self.sizes: dict[str, int] = {}
        self.bytes = 0
        self.ring: deque[str] = deque()

    def record(self, tenant_id: str, query: str) -> None:
        size = ENTRY_OVERHEAD + len(query)
        if size + TENANT_OVERHEAD > self.max_bytes:
            return
        if tenant_id not in self.tenants:
            self.tenants[tenant_id], self.sizes[tenant_id] = deque(), TENANT_OVERHEAD
            self.bytes += TENANT_OVERHEAD
            self.ring.append(tenant_id)
        self.tenants[tenant_id].append((query, size))
        self._grow(tenant_id, size)
        if len(self.tenants[tenant_id]) > self.per_tenant:
            self._drop_oldest(tenant_id)
        share = self.max_bytes // len(self.tenants)
        for _ in range(len(self.ring)):
            if self.bytes <= self.max_bytes:
                return
            looked_at = self.ring[0]
            self.ring.rotate(-1)
            while self.tenants[looked_at] and self.sizes[looked_at] > share:
                if self.bytes <= self.max_bytes:
                    break
                self._drop_oldest(looked_at)
            if not self.tenants[looked_at]:
                self.bytes -= self.sizes.pop(looked_at)
                del self.tenants[looked_at]
                self.ring.remove(looked_at)

    def _grow(self, tenant_id: str, size: int) -> None:
        self.sizes[tenant_id] += size
        self.bytes += size

    def _drop_oldest(self, tenant_id: str) -> None:
        _, size = self.tenants[tenant_id].popleft()
        self._grow(tenant_id, -size)


@pytest.mark.parametrize("seed", range(8))
def test_the_trim_takes_from_the_same_tenants_in_the_same_order_as_a_rotating_deque(
    seed: int,
) -> None:
    rng = random.Random(seed)
    per_tenant = rng.choice((3, 20, 1000))
    max_bytes = rng.randrange(2, 40) * (TENANT_OVERHEAD + ENTRY_OVERHEAD)
    sample = TrafficSample(per_tenant=per_tenant, max_bytes=max_bytes)
    spec = _RotatingDeque(per_tenant, max_bytes)
    # A few heavy tenants, a crowd that comes and goes, queries of any length.
    names = [f"t{n}" for n in range(rng.randrange(2, 60))]
    for step in range(3000):
        tenant = rng.choice(names[:3]) if rng.random() < 0.3 else rng.choice(names)
        if rng.random() < 0.05:
            tenant = f"new{step}"
        query = "x" * int(rng.expovariate(1 / 150))
        sample.record(tenant, _info(query), NOW + step, "ingester", 0, False)
        spec.record(tenant, query)
        assert sample.bytes == spec.bytes <= max_bytes
        assert sample.tenants() == sorted(spec.tenants)
        assert [r.query for r in sample.requests(tenant)] == [
            q for q, _ in spec.tenants.get(tenant, ())
        ]
    for tenant in sample.tenants():
        assert [r.query for r in sample.requests(tenant)] == [q for q, _ in spec.tenants[tenant]]


@contextmanager
def _lines_run_in_the_sample() -> Iterator[list[int]]:
    """Counts the lines of the sample and its trim ring executed: their work, not time."""
    lines = [0]
    sources = {traffic.__file__, trim_ring.__file__}

    def count(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            lines[0] += 1
        return count

    def enter(frame: FrameType, event: str, arg: Any) -> Any:
        return count if frame.f_code.co_filename in sources else None

    before = sys.gettrace()
    sys.settrace(enter)
    try:
        yield lines
    finally:
        sys.settrace(before)


def test_a_record_at_the_cap_costs_logarithmic_work_while_20000_tenants_come_and_go() -> None:
    """20,000 tenants of one short request each fill the cap; then new ones
    keep coming (a tenant seen lately now and then sends another), most
    with longer queries. The tenants kept sit under the equal share and the
    few over it are anywhere in the ring: a walk past the ones under it cost
    each record tens of thousands of steps; the trim must find the few
    without looking at the rest."""
    rng = random.Random(7)
    tenants = 20_000
    sample = TrafficSample(max_bytes=tenants * (TENANT_OVERHEAD + ENTRY_OVERHEAD + 2) + 500)
    for arrival in range(tenants):
        sample.record(f"t{arrival}", _info("up"), NOW, "ingester", 0, False)
    costs = []
    with _lines_run_in_the_sample() as lines:
        for arrival in range(tenants, tenants + 3000):
            if rng.random() < 0.1:
                arrival -= rng.randrange(1, 500)
            before = lines[0]
            sample.record(f"t{arrival}", _info("q" * rng.randrange(60)), NOW, "ingester", 0, False)
            costs.append(lines[0] - before)
            assert sample.bytes <= sample.max_bytes
    assert len(sample.tenants()) >= tenants - 10
    # The tree is some 3*log2(n) deep and a record climbs, descends and
    # rotates along a few such paths; a walk past the 20,000 would be some
    # 150,000 lines.
    bound = 30 * math.log2(tenants)
    assert sum(costs) / len(costs) < bound
    assert max(costs) < 3 * bound


def test_over_the_cap_the_tenants_over_an_equal_share_lose_their_oldest_in_turn() -> None:
    entry = ENTRY_OVERHEAD + 2
    sample = TrafficSample(max_bytes=4 * TENANT_OVERHEAD + 10 * entry)
    for tenant, count in (("a", 4), ("b", 4), ("d", 1), ("c", 1)):
        for n in range(count):
            sample.record(tenant, _info(f"{tenant}{n}"), NOW, "ingester", 0, False)
    assert sample.bytes == sample.max_bytes
    # Each of c's next three requests takes one from the next tenant in the
    # ring over the share (a, then b, then c itself), passing d, under it.
    for n in range(1, 4):
        sample.record("c", _info(f"c{n}"), NOW, "ingester", 0, False)
    kept = {tenant: [r.query for r in sample.requests(tenant)] for tenant in sample.tenants()}
    assert kept == {
        "a": ["a1", "a2", "a3"],
        "b": ["b1", "b2", "b3"],
        "c": ["c1", "c2", "c3"],
        "d": ["d0"],
    }
    assert sample.bytes == sample.max_bytes
