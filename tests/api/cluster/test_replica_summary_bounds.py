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

from api.cluster.replicas import PUBLISHED_LEAVES, PUBLISHED_ORG_ID_CHARS, merge, summarize
from scheduler_core.snapshot import LeafSnapshot
from tests.api.cluster.replica_summaries import WALL, peer, snapshot


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
