"""Org IDs as Cortex reads them: each tenant checked, several given combined limits."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core import federation, queue_limits
from scheduler_core.errors import TooManyRequests
from scheduler_core.federation import (
    combined_limits,
    federated_tenants_error,
    normalized_org_id,
    org_id_error,
    org_limits,
)
from scheduler_core.model import (
    PriorityDef,
    QueryAttribute,
    QueryPriority,
    QueryRejection,
    Request,
    TenantLimits,
)
from scheduler_core.queue import RequestQueue


@pytest.mark.parametrize(
    "org_id", ["a", "team-a|team-b", "a!-_.*'()Z9", "x" * 150 + "|" + "y" * 150]
)
def test_ids_cortex_accepts_are_accepted(org_id: str) -> None:
    assert org_id_error(org_id) is None


@pytest.mark.parametrize(
    ("org_id", "error"),
    [
        ("", "no org id"),
        ("a||b", "tenant ID is empty in 'a||b'"),
        ("a|", "tenant ID is empty in 'a|'"),
        ("ok|b c\x00", "tenant ID 'b c\\x00' contains unsupported character ' '"),
        ("équipe", "tenant ID 'équipe' contains unsupported character 'é'"),
        ("a|" + "x" * 151, "tenant ID is too long: max 150 characters"),
        ("a|..", "tenant ID is '.' or '..'"),
        (".", "tenant ID is '.' or '..'"),
    ],
)
def test_each_id_cortex_refuses_is_refused_in_its_words(org_id: str, error: str) -> None:
    assert org_id_error(org_id) == error


_CORTEX = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!-_.*'()")


@given(
    st.lists(
        st.one_of(
            st.text(alphabet="ab|.( é\n", max_size=6),
            st.text(alphabet="ab", min_size=148, max_size=152),
        ),
        max_size=4,
    ).map("".join)
)
def test_an_org_id_is_accepted_exactly_when_every_tenant_in_it_is_valid(org_id: str) -> None:
    tenants = org_id.split("|")
    valid = bool(org_id) and all(
        0 < len(t) <= 150 and set(t) <= _CORTEX and t not in (".", "..") for t in tenants
    )
    assert (org_id_error(org_id) is None) == valid


def test_one_tenant_reads_its_own_limits() -> None:
    queue = RequestQueue()
    queue.set_tenant_limits("a", TenantLimits(max_queriers=2))
    assert org_limits(queue, "a") == TenantLimits(max_queriers=2)


def test_reading_a_federated_ids_limits_combines_its_tenants_and_stores_nothing() -> None:
    queue = RequestQueue()
    queue.set_tenant_limits("a", TenantLimits(max_queriers=4))
    queue.set_tenant_limits("b", TenantLimits(max_queriers=2))
    assert org_limits(queue, "a|b").max_queriers == 2
    # Admission and explain only read: no queue exists for `a|b` yet.
    assert queue.tenant_limits("a|b") == TenantLimits()


def _federated(rid: str, org_id: str = "a|b", priority: int = 0) -> Request:
    return Request(id=rid, tenant_id=org_id, component="ingester", priority=priority)


def test_a_federated_queue_runs_under_its_combined_limits_as_they_change() -> None:
    queue = RequestQueue()
    queue.set_tenant_limits("a", TenantLimits(max_queriers=4))
    queue.set_tenant_limits("b", TenantLimits(max_queriers=2))
    queue.enqueue(_federated("r1"))
    # Stored under the whole ID, where the queue's shuffle shard reads it.
    assert queue.tenant_limits("a|b").max_queriers == 2
    queue.set_tenant_limits("b", TenantLimits(max_queriers=0))
    assert queue.tenant_limits("a|b").max_queriers == 4


def test_a_tenant_s_new_limits_reach_its_live_federated_queues_at_once() -> None:
    queue = RequestQueue()
    for querier in ("q1", "q2", "q3"):
        queue.connect_querier(querier)
    queue.enqueue(_federated("r1"))
    queue.enqueue(_federated("r2", "b|c"))
    assert queue.serving("a|b").shard is None
    queue.set_tenant_limits("a", TenantLimits(max_queriers=1, max_outstanding=3))
    # Its shard and cap now, before any other request of `a|b`; `b|c` untouched.
    shard = queue.serving("a|b").shard
    assert shard is not None and len(shard) == 1
    assert queue.tenant_limits("a|b") == TenantLimits(max_queriers=1, max_outstanding=3)
    assert queue.tenant_limits("b|c") == TenantLimits()
    queue.remove_tenant_limits("a")
    assert queue.serving("a|b").shard is None
    assert queue.tenant_limits("a|b") == TenantLimits()


def test_a_tenant_edit_does_not_bring_back_an_idle_federated_queue() -> None:
    queue = RequestQueue()
    queue.enqueue(_federated("r1"))
    queue.cancel("r1")
    queue.set_tenant_limits("a", TenantLimits(max_queriers=1))
    assert queue.tenant_limits("a|b") == TenantLimits()
    assert [t.tenant_id for t in queue.snapshot().tenants] == ["a"]


def test_a_batch_of_edits_re_derives_each_federated_queue_once_at_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queue = RequestQueue()
    queue.enqueue(_federated("r1", "a|b|c"))
    queue.enqueue(_federated("r2", "c|d"))
    kept: list[str] = []
    keep = queue_limits.keep_org_limits

    def counted(table: RequestQueue, org_id: str) -> None:
        kept.append(org_id)
        keep(table, org_id)

    monkeypatch.setattr(queue_limits, "keep_org_limits", counted)
    with queue.limits_batch():
        for tenant in ("a", "b", "c", "d"):
            queue.set_tenant_limits(tenant, TenantLimits(max_outstanding=9))
        assert queue.tenant_limits("a|b|c") == TenantLimits()  # not yet
    assert sorted(kept) == ["a|b|c", "c|d"]
    assert queue.tenant_limits("a|b|c") == TenantLimits(max_outstanding=9)
    assert queue.tenant_limits("c|d") == TenantLimits(max_outstanding=9)


def test_a_federated_queue_with_nothing_left_forgets_its_limits_shard_and_reservations() -> None:
    queue = RequestQueue()
    for _ in range(4):
        queue.connect_querier("q1")
        queue.connect_querier("q2")
    reserving = QueryPriority(
        enabled=True, priorities=(PriorityDef(priority=5, reserved_queriers=1),)
    )
    queue.set_tenant_limits("a", TenantLimits(query_priority=reserving))
    queue.enqueue(_federated("r1", priority=5))
    assert queue.serving("a|b").reservations
    request, _ = queue.dequeue("q1", 0)
    if request is None:
        request, _ = queue.dequeue("q2", 0)
    assert request is not None
    queue.complete(request.id)
    assert queue.tenant_limits("a|b") == TenantLimits()
    assert queue.serving("a|b") == queue.serving("never-seen")._replace(tenant_id="a|b")
    snapshot = queue.snapshot()
    assert [t.tenant_id for t in snapshot.tenants] == ["a"]
    assert all(not q.reservations or q.reservations[0].tenant_id == "a" for q in snapshot.queriers)


@pytest.mark.parametrize("released_first", [True, False])
def test_a_federated_request_put_back_after_its_querier_left_keeps_its_combined_limits(
    released_first: bool,
) -> None:
    queue = RequestQueue()
    worker = queue.connect_querier("q1")
    queue.set_tenant_limits("a", TenantLimits(max_queriers=1, max_outstanding=7))
    queue.enqueue(_federated("r1"))
    request, _ = queue.dequeue("q1", worker)
    assert request is not None
    if released_first:  # the runtime's path: the disconnect releases it, then it goes back
        assert queue.disconnect_querier_worker("q1", worker) is request
    queue.requeue_front(request)

    assert queue.tenant_length("a|b") == 1
    assert queue.tenant_limits("a|b") == TenantLimits(max_queriers=1, max_outstanding=7)


def test_draining_the_queue_forgets_a_sharded_federated_queue_with_it() -> None:
    queue = RequestQueue()
    for querier in ("q1", "q2"):
        queue.connect_querier(querier)
    queue.set_tenant_limits("a", TenantLimits(max_queriers=1))
    queue.enqueue(_federated("r1"))

    assert [r.id for r in queue.drain()] == ["r1"]
    assert queue.tenant_limits("a|b") == TenantLimits()
    assert [t.tenant_id for t in queue.snapshot().tenants] == ["a"]


def test_distinct_federated_ids_leave_nothing_behind_once_idle() -> None:
    queue = RequestQueue()
    queue.set_tenant_limits("a", TenantLimits(max_queriers=2))
    for i in range(100):
        queue.enqueue(_federated(f"r{i}", f"a|x{i}"))
        queue.cancel(f"r{i}")
    assert [t.tenant_id for t in queue.snapshot().tenants] == ["a"]
    assert queue.tenant_limits("a|x7") == TenantLimits()


@pytest.mark.parametrize(
    ("limit", "component", "refusal"),
    [(0, "ingester", TooManyRequests), (5, "no-such-component", ValueError)],
)
def test_a_federated_request_the_queue_refuses_leaves_no_queue(
    limit: int, component: str, refusal: type[Exception]
) -> None:
    queue = RequestQueue()
    queue.set_tenant_limits("a", TenantLimits(max_outstanding=limit))
    with pytest.raises(refusal):
        queue.enqueue(Request(id="r1", tenant_id="a|b", component=component))
    assert queue.tenant_limits("a|b") == TenantLimits()
    assert [t.tenant_id for t in queue.snapshot().tenants] == ["a"]


@pytest.mark.parametrize(
    ("org_id", "max_tenants", "refused"),
    [
        ("a|b|c", 0, False),  # 0: no limit, as in Cortex
        ("a|b|c", 3, False),
        ("a|b|c", 2, True),
        ("a", 1, False),
        ("a|b", 1, True),
        ("|".join(f"t{n}" for n in range(140_000)), 10, True),
        ("a|a|a", 2, False),  # a tenant named twice counts once, as Mimir counts
        ("a|b|a|b|c", 2, True),
    ],
)
def test_a_federated_id_may_name_at_most_max_tenants(
    org_id: str, max_tenants: int, refused: bool
) -> None:
    problem = federated_tenants_error(org_id, max_tenants)
    assert (problem is not None) == refused
    if refused:
        count = len(set(org_id.split("|")))
        assert problem == (
            f"the org ID names {count} tenants; at most {max_tenants} may be federated"
        )


@pytest.mark.parametrize(
    ("org_id", "normalised"),
    [("a", "a"), ("a|a|a", "a"), ("b|a", "a|b"), ("b|a|b|c", "a|b|c"), ("A|a", "A|a")],
)
def test_an_org_id_is_normalised_as_tenant_ids_reads_it(org_id: str, normalised: str) -> None:
    assert normalized_org_id(org_id) == normalised


def test_a_federated_enqueue_combines_its_tenants_limits_once_until_one_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Admission, then the queue, each combined them: twice per enqueue."""
    combined: list[TenantLimits] = []

    def counted(parts: list[TenantLimits]) -> TenantLimits:
        combined.append(combined_limits(parts))
        return combined[-1]

    monkeypatch.setattr(federation, "combined_limits", counted)
    queue = RequestQueue()
    queue.set_tenant_limits("a", TenantLimits(max_queriers=4))
    queue.set_tenant_limits("b", TenantLimits(max_queriers=2))
    for rid in ("r1", "r2"):  # as both doors do: admission reads, the queue stores
        assert org_limits(queue, "a|b").max_queriers == 2
        queue.enqueue(_federated(rid))
    assert len(combined) == 1
    queue.set_tenant_limits("b", TenantLimits(max_queriers=3))
    assert org_limits(queue, "a|b").max_queriers == 3
    queue.enqueue(_federated("r3"))
    assert len(combined) == 2 and queue.tenant_limits("a|b") is combined[-1]


_LIMITS = [
    TenantLimits(),
    TenantLimits(max_queriers=2, max_outstanding=5),
    TenantLimits(max_queriers=3, max_query_capacity=0.5),
    TenantLimits(query_priority=QueryPriority(True, (PriorityDef(priority=4),))),
    TenantLimits(query_rejection=QueryRejection(True, [QueryAttribute(regex="x")])),
]
_OPS = st.lists(
    st.tuples(
        st.sampled_from(["set", "remove", "admit", "enqueue", "finish"]),
        st.integers(0, 1),  # which of two queues
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from(["a|b", "b|c", "a|b|c", "a|a", "c|a"]),
        st.integers(0, len(_LIMITS) - 1),
    ),
    max_size=40,
)


@settings(derandomize=True, max_examples=200)
@given(_OPS)
def test_federated_limits_are_always_those_combined_afresh_from_each_tenants(
    ops: list[tuple[str, int, str, str, int]],
) -> None:
    """Edits, removals, two queues and several IDs interleaved: never a stale answer."""
    queues = [RequestQueue(), RequestQueue()]
    queued: list[list[tuple[str, str]]] = [[], []]
    for n, (op, which, tenant, org_id, pick) in enumerate(ops):
        queue = queues[which]
        fresh = combined_limits([queue.tenant_limits(t) for t in org_id.split("|")])
        if op == "set":
            # A copy: each edit stores a new object, as applying a config does.
            queue.set_tenant_limits(tenant, replace(_LIMITS[pick]))
        elif op == "remove":
            queue.remove_tenant_limits(tenant)
        elif op == "admit":
            assert org_limits(queue, org_id) == fresh
        elif op == "enqueue" and fresh.max_outstanding != 0:
            queue.enqueue(_federated(f"r{n}", org_id))
            queued[which].append((f"r{n}", org_id))
        elif op == "finish" and queued[which]:
            queue.cancel(queued[which].pop(0)[0])
        # Every live federated queue runs under its tenants' limits of now.
        for q, held in zip(queues, queued, strict=True):
            for live in {o for _, o in held if "|" in o}:
                parts = [q.tenant_limits(t) for t in live.split("|")]
                assert q.tenant_limits(live) == combined_limits(parts)
