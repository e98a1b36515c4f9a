"""A replica's frontends in its summary: capped, totals true, and exact once merged."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from api.cluster.replica_frontends import (
    MAX_PUBLISHED_FRONTENDS,
    ReplicaFrontends,
    frontend_rank,
    frontends_block,
    parse_frontends_block,
)
from api.wire.frontends import FrontendRow
from dashboard.frontend_view import MAX_FRONTENDS_SHOWN, build_merged_frontends, local_frontends


def ws(address: str, outstanding: int, since: float | None = 2.0) -> FrontendRow:
    return FrontendRow("websocket", address, "fe", 1, outstanding, since)


def over_json(replica: str, rows: list[FrontendRow]) -> ReplicaFrontends:
    """Published, sent as JSON and read back, as a peer's block arrives."""
    parsed = parse_frontends_block(replica, json.loads(json.dumps(frontends_block(rows))))
    assert parsed is not None
    return parsed


def test_a_block_carries_the_top_rows_and_totals_over_every_frontend() -> None:
    rows = [ws(f"10.0.0.{i}:1", i % 7) for i in range(120)]
    total, outstanding, published = frontends_block(rows)
    assert (total, outstanding) == (120, sum(i % 7 for i in range(120)))
    assert len(published) == MAX_PUBLISHED_FRONTENDS
    expected = sorted(rows, key=frontend_rank)[:MAX_PUBLISHED_FRONTENDS]
    assert [row[1] for row in published] == [row.address for row in expected]


def test_a_block_round_trips_through_json_with_ages_to_a_tenth() -> None:
    rows = [ws("10.0.0.1:1", 3, since=12.345), FrontendRow("grpc", "10.0.0.9:9", "", 4, 1, None)]
    assert over_json("b", rows) == ReplicaFrontends(
        "b",
        2,
        4,
        (ws("10.0.0.1:1", 3, since=12.3), FrontendRow("grpc", "10.0.0.9:9", "", 4, 1, None)),
    )


def test_a_peer_that_publishes_no_block_has_no_frontends_rather_than_none_connected() -> None:
    assert parse_frontends_block("old", None) is None
    assert parse_frontends_block("new", [0, 0, []]) == ReplicaFrontends("new", 0, 0, ())


@pytest.mark.parametrize(
    "raw",
    [
        {"total": 1},
        [1, 0],
        [1, 0, [["carrier-pigeon", "x", "", 1, 0, None]]],
        [1, 0, [["websocket", "x", "", 1, 0]]],
        [1, 0, [["websocket", "x", "", "many", 0, None]]],
    ],
)
def test_a_malformed_block_is_refused(raw: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        parse_frontends_block("b", raw)


def test_ageing_a_block_moves_known_connection_ages_only() -> None:
    block = ReplicaFrontends("b", 2, 0, (ws("a:1", 0, since=1.0), ws("b:1", 0, since=None)))
    assert [r.connected_for for r in block.aged(0.5).rows] == [1.5, None]


def test_the_panel_never_shows_more_than_a_peer_publishes() -> None:
    assert MAX_FRONTENDS_SHOWN <= MAX_PUBLISHED_FRONTENDS


@pytest.mark.parametrize("seed", range(8))
def test_merging_capped_blocks_shows_what_merging_every_row_would(seed: int) -> None:
    rng = random.Random(seed)
    everyone: dict[str, list[FrontendRow]] = {}
    for replica in ("a", "b", "c"):
        count = rng.randrange(0, 3 * MAX_PUBLISHED_FRONTENDS)
        # Few distinct addresses and counts, so ties across replicas are common.
        addresses = rng.sample(range(200), count)
        everyone[replica] = [ws(f"10.0.0.{n}:80", rng.randrange(4)) for n in addresses]
    local = local_frontends("a", everyone["a"])
    full = [local_frontends(r, everyone[r]) for r in ("b", "c")]
    capped = [over_json(r, everyone[r]) for r in ("b", "c")]
    want = build_merged_frontends(local, full)
    got = build_merged_frontends(local, capped)
    assert got == want
    assert got["total"] == sum(len(rows) for rows in everyone.values())
