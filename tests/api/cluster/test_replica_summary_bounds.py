"""A replica summary stays small: its longest queues listed, the rest counted.

One frontend sending requests under huge federated org IDs (or one request
each for tens of thousands of tenants) once made a summary of tens of
megabytes, rewritten every half second: its peers took its replica for
down. Now at most `PUBLISHED_LEAVES` queues travel, each under an org ID of
at most `PUBLISHED_ORG_ID_CHARS` characters; the rest are counted, the merge
sums them as unlisted, and the header says so.
"""

from __future__ import annotations

import json

from api.cluster.replica_usage import merge_usage
from api.cluster.replicas import (
    PUBLISHED_LEAVES,
    PUBLISHED_ORG_ID_CHARS,
    SHORTENED_MARK,
    PeerSummary,
    merge,
    summarize,
)
from scheduler_core.snapshot import LeafSnapshot, QuerierSnapshot, Reservation, WorkerSnapshot
from tests.api.cluster.replica_summaries import WALL, peer, snapshot
from tests.api.cluster.test_replica_usage import block, row


def leaf(tenant: str, length: int, oldest: float = 40.0) -> LeafSnapshot:
    return LeafSnapshot(tenant, "ingester", length, ((0, length),), oldest)


def test_a_summary_lists_the_longest_queues_and_counts_the_rest_in_its_total() -> None:
    many = [leaf(f"t{n}", 1) for n in range(PUBLISHED_LEAVES + 500)] + [leaf("deep", 70)]
    raw = summarize(snapshot(50.0, many), replica="b", wall_time=WALL, stats=None)
    listed = {row[0] for row in raw["leaves"]}
    assert len(listed) == PUBLISHED_LEAVES and "deep" in listed
    assert raw["cut"] == [501, 501]
    assert raw["total"] == PUBLISHED_LEAVES + 500 + 70


def test_a_queue_under_an_org_id_too_long_to_publish_is_counted_not_listed() -> None:
    huge = "|".join(f"{n:0>149}" for n in range(6000))  # 900 KB: a legal federated org ID
    raw = summarize(
        snapshot(50.0, [leaf(huge, 4), leaf("acme", 2), leaf("x" * PUBLISHED_ORG_ID_CHARS, 1)]),
        replica="b",
        wall_time=WALL,
        stats=None,
    )
    assert [row[0] for row in raw["leaves"]] == ["acme", "x" * PUBLISHED_ORG_ID_CHARS]
    assert raw["cut"] == [1, 4]
    assert len(json.dumps(raw)) < 2_000


def test_a_small_queue_publishes_no_cut_and_reads_as_none_cut() -> None:
    raw = summarize(snapshot(50.0, [leaf("acme", 2)]), replica="b", wall_time=WALL, stats=None)
    assert "cut" not in raw
    assert peer("b", snapshot(50.0, [leaf("acme", 2)]), published=WALL).cut == (0, 0)


def test_the_merge_counts_what_peers_cut_and_its_header_says_so() -> None:
    local = snapshot(1000.0, [leaf("acme", 1, oldest=999.0)])
    huge = "y" * (PUBLISHED_ORG_ID_CHARS + 1)
    b = peer("b", snapshot(50.0, [leaf(huge, 7), leaf("acme", 2)]), published=WALL)
    view = merge(local, "a", [b], wall_now=WALL)
    assert view.snapshot.total == 10  # 1 here, 9 on b
    assert sum(x.length for x in view.snapshot.leaves) == 3
    assert view.unlisted == 7
    header = view.header()
    assert header["unlisted_requests"] == 7
    assert "7 of peers' queued requests in no queue listed" in header["note"]


def test_a_merge_with_nothing_cut_adds_nothing_to_its_header() -> None:
    local = snapshot(1000.0, [leaf("acme", 1, oldest=999.0)])
    b = peer("b", snapshot(50.0, [leaf("acme", 2)]), published=WALL)
    header = merge(local, "a", [b], wall_now=WALL).header()
    assert "unlisted_requests" not in header and "unlisted" not in header["note"]


def test_a_running_request_under_a_huge_org_id_is_shown_shortened_and_marked() -> None:
    huge = "|".join(f"{n:0>149}" for n in range(6000))
    busy = WorkerSnapshot("q1", 0, "r1", huge, "ingester", 0, 40.0, False)
    idle = WorkerSnapshot("q1", 1, None, None, None, None, 40.0, True)
    querier = QuerierSnapshot(
        "q1", (busy, idle), False, True, None, (Reservation(huge, 1, "q1"),), False
    )
    raw = summarize(snapshot(50.0, [], [querier]), replica="b", wall_time=WALL, stats=None)
    assert len(json.dumps(raw)) < 4_000
    shown = huge[:PUBLISHED_ORG_ID_CHARS] + SHORTENED_MARK
    parsed = PeerSummary.parse(json.loads(json.dumps(raw)))
    (row,) = parsed.queriers
    assert [w[2] for w in row[6]] == [shown, None]
    assert row[5] == [[shown, 1]]


def test_the_busiest_tenants_list_no_huge_org_id_and_their_totals_still_count_it() -> None:
    huge = "z" * (PUBLISHED_ORG_ID_CHARS + 1)
    usage = block(row(huge, 9.0, 3, 0.1), row("acme", 1.0, 2, 0.2))
    raw = summarize(snapshot(50.0, []), replica="b", wall_time=WALL, stats={"usage": usage})
    published = raw["stats"]["usage"]
    assert [r["tenant"] for r in published["tenants"]] == ["acme"]
    assert (published["querier_seconds"], published["tenant_count"]) == (10.0, 2)
    assert [r["tenant"] for r in usage["tenants"]] == [huge, "acme"]  # this replica's own, whole
    merged = merge_usage([published], 50)
    assert merged is not None and merged["tenants"][0]["share"] == 0.1
