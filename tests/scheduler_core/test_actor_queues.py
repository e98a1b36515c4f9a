"""Actor sub-queues (Loki's hierarchical tenant queues) inside one leaf, through the queue."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from scheduler_core.actor_path import (
    actor_path_from_headers,
    actor_path_from_pairs,
    parse_actor_path,
)
from scheduler_core.model import QueryPriority, QueueConfig, Request, TenantLimits
from scheduler_core.queue import RequestQueue
from tests.fakes import FakeClock


def queue(**config: object) -> tuple[RequestQueue, int]:
    q = RequestQueue(QueueConfig(max_outstanding_requests_per_tenant=10_000, **config))  # type: ignore[arg-type]
    return q, q.connect_querier("q")


def put(q: RequestQueue, rid: str, actor: tuple[str, ...] = (), **fields: object) -> Request:
    request = Request(id=rid, tenant_id=fields.pop("tenant", "t"), actor_path=actor, **fields)  # type: ignore[arg-type]
    q.enqueue(request)
    return request


def drain(q: RequestQueue, worker: int) -> list[str]:
    out = []
    while (got := q.dequeue("q", worker)[0]) is not None:
        out.append(got.id)
        q.complete(got.id)
    return out


def test_lokis_same_level_example_is_served_in_lokis_order() -> None:
    # Loki's TestQueryFairnessAcrossSameLevel: local, abc, xyz share the
    # tenant; xyz's own requests, 123 and 456 share xyz.
    q, w = queue()
    for path, ids in (
        ((), [0, 1, 2]),
        (("abc",), [10, 11, 12]),
        (("xyz",), [20, 21, 22]),
        (("xyz", "123"), [200]),
        (("xyz", "456"), [210]),
    ):
        for i in ids:
            put(q, str(i), path)
    assert drain(q, w) == [str(i) for i in (0, 10, 20, 1, 11, 200, 2, 12, 210, 21, 22)]


def test_two_actors_and_local_work_each_get_a_third() -> None:
    q, w = queue()
    for i in range(30):
        put(q, f"a{i}", ("a",))
        put(q, f"b{i}", ("b",))
        put(q, f"l{i}")
    first = drain(q, w)[:30]
    assert Counter(rid[0] for rid in first) == {"a": 10, "b": 10, "l": 10}


def test_fifo_within_one_actor() -> None:
    q, w = queue()
    for i in range(5):
        put(q, f"a{i}", ("users", "joe"))
    put(q, "other", ("users", "ann"))
    served = drain(q, w)
    assert [r for r in served if r.startswith("a")] == [f"a{i}" for i in range(5)]


def test_a_path_deeper_than_the_limit_joins_the_sub_queue_of_its_first_levels() -> None:
    q, w = queue(max_queue_hierarchy_levels=2)
    deep = put(q, "deep", ("users", "joe", "dash1", "panel3"))
    put(q, "joe", ("users", "joe"))
    assert deep.actor_path == ("users", "joe")
    (leaf,) = q.snapshot().leaves
    assert {a.path: a.length for a in leaf.actors} == {("users",): 2, ("users", "joe"): 2}
    assert drain(q, w) == ["deep", "joe"]


def test_the_queue_places_a_request_by_its_first_levels_and_keeps_the_path_it_was_sent() -> None:
    q, w = queue(max_queue_hierarchy_levels=3)
    sent = ("users", "joe", "dash1", "panel3")
    deep = put(q, "deep", sent)
    shallow = put(q, "shallow", ("users", "ann"))
    assert (deep.actor_path, deep.sent_actor_path) == (sent[:3], sent)
    assert (shallow.actor_path, shallow.sent_actor_path) == (("users", "ann"),) * 2
    assert shallow.arrived_actor_path is None  # nothing was cut: nothing more is stored
    # A re-queue under fewer levels cuts the placed path again; the path as
    # it was sent stays whole.
    got = q.dequeue("q", w)[0]
    assert got is deep
    q.set_config(replace(q.config, max_queue_hierarchy_levels=1))
    q.requeue_front(deep)
    assert (deep.actor_path, deep.sent_actor_path) == (("users",), sent)
    (leaf,) = q.snapshot().leaves
    assert {a.path: a.length for a in leaf.actors} == {("users",): 2, ("users", "ann"): 1}
    assert drain(q, w) == ["deep", "shallow"]


def test_zero_levels_turns_actor_sub_queues_off() -> None:
    q, w = queue(max_queue_hierarchy_levels=0)
    for i in range(3):
        put(q, f"a{i}", ("a",))
    put(q, "b0", ("b",))
    assert q.snapshot().leaves[0].actors == ()
    assert drain(q, w) == ["a0", "a1", "a2", "b0"]


def test_empty_sub_queues_are_pruned_at_once_by_dequeues_and_cancels() -> None:
    q, w = queue()
    for i in range(1000):
        put(q, f"r{i}", ("users", f"u{i}"))
    put(q, "keep", ("apps", "cli"))
    for i in range(0, 1000, 2):
        q.cancel(f"r{i}")
    served = drain(q, w)
    assert len(served) == 501 and "keep" in served
    assert len(q) == 0 and q.snapshot().leaves == ()
    put(q, "again", ("apps", "cli"))
    leaf = q._tenants["t"].children["unknown"]  # noqa: SLF001 - the structure itself
    fifo = leaf.queues[0]
    assert fifo.ring is not None and list(fifo.ring) == ["apps"]
    apps = fifo.ring["apps"]
    assert apps is not None and list(apps.ring or {}) == ["cli"] and apps.live == 1


def test_cancelling_the_last_request_of_an_actor_drops_it_from_the_turns() -> None:
    q, w = queue()
    put(q, "a0", ("a",))
    put(q, "b0", ("b",))
    put(q, "c0", ("c",))
    q.cancel("b0")
    assert {a.path for a in q.snapshot().leaves[0].actors} == {("a",), ("c",)}
    assert drain(q, w) == ["a0", "c0"]


def test_priority_decides_first_then_actors_take_turns() -> None:
    q, w = queue()
    q.set_tenant_limits("t", TenantLimits(query_priority=QueryPriority(enabled=True)))
    for i in range(3):
        put(q, f"lo-a{i}", ("a",), priority=0)
        put(q, f"hi-a{i}", ("a",), priority=5)
    put(q, "hi-b0", ("b",), priority=5)
    put(q, "hi-l0", (), priority=5)
    assert drain(q, w) == [
        "hi-a0", "hi-b0", "hi-l0", "hi-a1", "hi-a2", "lo-a0", "lo-a1", "lo-a2",
    ]  # fmt: skip


def test_aging_ranks_a_priority_by_the_request_it_would_serve_next() -> None:
    clock = FakeClock(0.0)
    q = RequestQueue(QueueConfig(priority_aging_seconds=10.0), clock=clock)
    w = q.connect_querier("q")
    put(q, "old-lo", ("a",), priority=0)
    clock.now = 5.0
    put(q, "hi", ("b",), priority=1)  # rank 10 - 5 = 5 beats 0 - 0 = 0
    clock.now = 30.0
    put(q, "new-lo", ("c",), priority=0)
    assert drain(q, w) == ["hi", "old-lo", "new-lo"]


def test_a_request_put_back_at_the_front_is_served_next() -> None:
    q, w = queue()
    put(q, "a0", ("a",))
    put(q, "a1", ("a",))
    put(q, "b0", ("b",))
    got, _ = q.dequeue("q", w)
    assert got is not None and got.id == "a0"
    q.requeue_front(got)
    assert drain(q, w) == ["a0", "b0", "a1"]


def test_a_leaf_with_actors_never_takes_the_plain_fast_path() -> None:
    q, _ = queue()
    put(q, "l0")
    leaf = q._tenants["t"].children["unknown"]  # noqa: SLF001
    assert leaf.plain == 0
    put(q, "a0", ("a",))
    assert leaf.plain is None and leaf.has_actors


def test_a_snapshot_lists_a_bounded_number_of_actors_and_sums_the_rest() -> None:
    q, _ = queue()
    for i in range(500):
        put(q, f"r{i}", ("users", f"u{i:03d}"))
    put(q, "cli", ("apps",))
    (leaf,) = q.snapshot().leaves
    assert len(leaf.actors) <= 22
    top = [a for a in leaf.actors if len(a.path) == 1 and not a.others]
    assert {a.path: a.length for a in top} == {("users",): 500, ("apps",): 1}
    others = [a for a in leaf.actors if a.others]
    listed = [a for a in leaf.actors if len(a.path) == 2 and not a.others]
    assert sum(a.length for a in listed + others) == 500
    assert sum(a.others for a in others) + len(listed) == 500


def test_actor_paths_are_read_from_either_protocols_headers() -> None:
    assert parse_actor_path(" users | joe ||") == ("users", "joe")
    assert parse_actor_path("") == ()
    assert parse_actor_path("|".join(["x"] * 100)) == ("x",) * 10
    assert actor_path_from_headers({"x-loki-actor-path": "apps|cli"}, "X-Loki-Actor-Path") == (
        "apps",
        "cli",
    )
    pairs = [("User-Agent", ["g"]), ("X-Team-Actor", ["a|b"])]
    assert actor_path_from_pairs(pairs, "x-team-actor") == ("a", "b")
    assert actor_path_from_pairs(pairs, "X-Loki-Actor-Path") == ()
