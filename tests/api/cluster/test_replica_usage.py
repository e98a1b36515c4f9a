"""Querier time per tenant merged across replicas (`api.cluster.replica_usage`)."""

from __future__ import annotations

from typing import Any

import pytest

from api.cluster.replica_usage import finish_block, merge_usage


def row(tenant: str, seconds: float, dispatched: int, wait_mean: float, **more: Any) -> dict:
    return {
        "tenant": tenant,
        "querier_seconds": seconds,
        "dispatched": dispatched,
        "ended": more.get("ended", dispatched),
        "running": more.get("running", 0),
        "wait_mean_seconds": wait_mean,
        "wait_max_seconds": more.get("wait_max", wait_mean),
        "rejected": more.get("rejected", 0),
    }


def block(*rows: dict, workers: int = 8, span: float = 60.0, count: int | None = None) -> dict:
    return finish_block(
        {
            "window_seconds": 60.0,
            "span_seconds": span,
            "querier_seconds": sum(r["querier_seconds"] for r in rows),
            "workers": workers,
            "tenant_count": len(rows) if count is None else count,
            "tenants": [dict(r) for r in rows],
        }
    )


def test_each_tenant_is_summed_over_the_replicas_and_the_busiest_come_first() -> None:
    a = block(row("big", 30.0, 10, 1.0, wait_max=4.0, running=2), row("small", 6.0, 2, 0.5))
    b = block(row("small", 30.0, 6, 0.1, rejected=3), row("big", 12.0, 30, 3.0, wait_max=9.0))
    merged = merge_usage([a, b], limit=10)
    assert merged is not None
    assert [r["tenant"] for r in merged["tenants"]] == ["big", "small"]
    big, small = merged["tenants"]
    assert (big["querier_seconds"], big["dispatched"], big["running"]) == (42.0, 40, 2)
    assert big["wait_mean_seconds"] == pytest.approx((10 * 1.0 + 30 * 3.0) / 40)
    assert big["wait_max_seconds"] == 9.0
    assert small["rejected"] == 3
    assert (merged["workers"], merged["querier_seconds"]) == (16, 78.0)
    assert big["share"] == pytest.approx(42.0 / 78.0, abs=1e-4)
    assert big["workers_held"] == pytest.approx(42.0 / 60.0, abs=1e-3)


def test_the_limit_cuts_the_list_and_the_tenant_count_is_at_least_any_replica_s() -> None:
    a = block(row("x", 3.0, 1, 0.0), row("y", 2.0, 1, 0.0), count=120)
    b = block(row("z", 1.0, 1, 0.0))
    merged = merge_usage([a, b], limit=2)
    assert merged is not None
    assert [r["tenant"] for r in merged["tenants"]] == ["x", "y"]
    assert merged["tenant_count"] == 120


@pytest.mark.parametrize(
    "bad",
    [
        None,
        "usage",
        {"window_seconds": 60.0},
        {**block(row("x", 1.0, 1, 0.0)), "workers": -1},
        {**block(row("x", 1.0, 1, 0.0)), "span_seconds": float("inf")},
        {**block(), "tenants": [{"tenant": 7}]},
        {**block(), "tenants": [{**row("x", 1.0, 1, 0.0), "running": True}]},
    ],
)
def test_a_peer_block_of_another_shape_is_passed_over(bad: Any) -> None:
    good = block(row("x", 5.0, 1, 0.0))
    assert merge_usage([good, bad], limit=5) == merge_usage([good], limit=5)
    assert merge_usage([bad], limit=5) is None
