"""Across replicas the header shows the busiest event loop, and ignores garbled peers."""

from __future__ import annotations

import math

from api.cluster.replica_stats import busiest, merge_stats
from tests.api.cluster.replica_summaries import peer, snapshot


def block(load: float, **extra: object) -> dict[str, object]:
    return {
        "window": 10.0,
        "busy": load,
        "process_cpu": load + 0.1,
        "lag_max": 0.001,
        "dispatched": 500.0,
        "cpu_per_query_us": 240.0,
        **extra,
    }


def named(*blocks: object) -> list[tuple[str, object]]:
    return [(f"r{i}", b) for i, b in enumerate(blocks)]


def test_the_busiest_replicas_block_is_shown_whole_and_named() -> None:
    shown = busiest(named(block(0.2), block(0.9, lag_max=0.2), block(0.5)))
    assert shown == block(0.9, lag_max=0.2, replica="r1")


def test_a_single_replica_is_not_named() -> None:
    assert busiest(named(block(0.6), None)) == block(0.6)


def test_no_blocks_or_none_well_formed_give_an_empty_block() -> None:
    assert busiest([]) == {}
    assert busiest(named(None, {}, "busy", block(0.4, busy="high"))) == {}


def test_fields_this_version_does_not_write_are_left_out() -> None:
    assert busiest(named(block(0.5, extra="<script>"))) == block(0.5)


def test_a_peer_from_another_version_or_with_garbled_numbers_is_passed_over() -> None:
    garbled = [
        block(0.99, busy=True),
        block(0.99, busy=math.nan),
        block(0.99, process_cpu=math.inf),
        block(0.99, cpu_per_query_us="fast"),
        block(1.5),  # more than the whole of one core
        block(0.99, lag_max=-1.0),
        {"busy": 0.99},  # fields this version writes are missing
    ]
    assert busiest(named(*garbled, block(0.3))) == block(0.3)


def test_a_replica_with_no_dispatches_has_no_cost_per_query_and_still_counts() -> None:
    idle = block(0.7, cpu_per_query_us=None)
    assert busiest(named(block(0.1), idle)) == {**idle, "replica": "r1"}


def _stats(rates: object, waits: object) -> dict[str, object]:
    return {"rates": rates, "wait_by_component": waits, "wait_by_priority": waits, "frontends": 0}


def test_a_peers_garbled_rates_and_wait_tables_are_passed_over_not_fatal() -> None:
    """One bad row (another version's, say) raised in every replica's inspector header."""
    local = _stats({"enqueued": 1.0}, {"ingester": [0.1, 0.5, 10]})
    good = peer("b", snapshot(1.0, []), published=1.0, stats=_stats({"enqueued": 2.0}, {}))
    garbled = [
        _stats({"enqueued": "x"}, {"ingester": [1.0, 2.0]}),  # a row of two
        _stats(["enqueued", 3.0], {"ingester": [1.0, math.nan, 3]}),
        _stats({"enqueued": -1.0}, {"ingester": "slow"}),
        _stats(None, [["ingester", 9.0, 9.0, 9]]),
    ]
    bad = [peer(f"c{i}", snapshot(1.0, []), published=1.0, stats=s) for i, s in enumerate(garbled)]
    merged = merge_stats(local, [good, *bad], "a")
    assert merged is not None
    assert merged["rates"] == {"enqueued": 3.0}
    assert merged["wait_by_component"] == {"ingester": [0.1, 0.5, 10]}
    assert merged["wait"] == {"p50": 0.1, "p99": 0.5}
