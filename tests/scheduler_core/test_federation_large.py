"""Org IDs as long as a Cortex frontend can forward: bounded, read at C speed, echoed short."""

from __future__ import annotations

import random
from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.federation import (
    MAX_ORG_ID_LENGTH,
    combined_limits,
    normalized_org_id,
    org_id_error,
    org_id_length_error,
    org_limits,
)
from scheduler_core.model import (
    PriorityDef,
    QueryAttribute,
    QueryPriority,
    QueryRejection,
    TenantLimits,
)
from scheduler_core.queue import RequestQueue

_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!-_*'()"


def _tenants(count: int) -> list[str]:
    """`count` distinct three-character tenants: the most an ID of its length can name."""
    return ["".join(t) for t in product(_ALPHABET, repeat=3)][:count]


def test_the_longest_org_id_a_cortex_frontend_can_forward_is_accepted() -> None:
    # Go's net/http: 1 MiB of headers (DefaultMaxHeaderBytes) plus 4096 bytes of slop.
    assert MAX_ORG_ID_LENGTH == (1 << 20) + 4096
    tenants = _tenants(MAX_ORG_ID_LENGTH // 4 - 1)
    org_id = "|".join(tenants)
    org_id += "|" + "x" * (MAX_ORG_ID_LENGTH - len(org_id) - 1)
    assert len(org_id) == MAX_ORG_ID_LENGTH

    assert org_id_length_error(org_id, "userID") is None
    assert org_id_error(org_id) is None


def test_an_org_id_one_character_longer_is_refused_naming_the_field_and_the_limit() -> None:
    org_id = "a|" * (MAX_ORG_ID_LENGTH // 2) + "b"
    assert len(org_id) == MAX_ORG_ID_LENGTH + 1

    problem = org_id_length_error(org_id, "userID")

    assert problem == (
        f"userID is {MAX_ORG_ID_LENGTH + 1} characters long; at most {MAX_ORG_ID_LENGTH} "
        "may be sent, the longest X-Scope-OrgID a Cortex query-frontend can forward"
    )
    # Every other reader of an org ID refuses it too, unread.
    assert org_id_error(org_id) == problem.replace("userID", "org ID", 1)


def test_a_refused_tenant_is_named_whole_when_short_and_cut_when_long() -> None:
    assert org_id_error("a||b") == "tenant ID is empty in 'a||b'"
    long_id = "|".join(_tenants(2_000)) + "||z"

    problem = org_id_error(long_id)

    assert problem is not None
    assert problem == f"tenant ID is empty in {long_id[:512]!r}... ({len(long_id)} characters)"
    spaced = "ok|" + "x " * 5_000
    assert org_id_error(spaced) == (
        f"tenant ID {('x ' * 256)!r}... (10000 characters) contains unsupported character ' '"
    )


@pytest.mark.parametrize(
    ("faults", "named"),
    [
        # (index, bad tenant) pairs planted in 10,000 good tenants; the earliest is named.
        ([(9_000, ""), (9_500, "a b")], "tenant ID is empty in"),
        ([(9_000, "a b"), (9_500, "")], "tenant ID 'a b' contains unsupported character ' '"),
        ([(7, "x" * 151), (8, ".")], "tenant ID is too long: max 150 characters"),
        ([(7, ".."), (8, "x" * 151)], "tenant ID is '.' or '..'"),
        ([(9_999, "x" * 150 + " ")], "tenant ID '" + "x" * 150 + " ' contains unsupported"),
    ],
)
def test_the_first_refused_tenant_of_a_long_id_is_the_one_named(
    faults: list[tuple[int, str]], named: str
) -> None:
    tenants = _tenants(10_000)
    for at, bad in faults:
        tenants[at] = bad

    problem = org_id_error("|".join(tenants))

    assert problem is not None and problem.startswith(named)


@settings(derandomize=True, max_examples=300)
@given(st.lists(st.text(alphabet="ab.( |", max_size=4), min_size=1, max_size=40).map("|".join))
def test_any_id_is_refused_exactly_as_a_walk_of_its_tenants_refuses_it(org_id: str) -> None:
    """The scans agree with the walk Cortex does, on the first tenant and its first fault."""

    def walked() -> str | None:
        for tenant in org_id.split("|"):
            if not tenant:
                return f"tenant ID is empty in {org_id!r}"
            bad = [c for c in tenant if c not in _ALPHABET + "."]
            if bad:
                return f"tenant ID {tenant!r} contains unsupported character {bad[0]!r}"
            if tenant in (".", ".."):
                return "tenant ID is '.' or '..'"
        return None

    assert org_id_error(org_id) == (walked() if org_id else "no org id")


def test_a_shuffled_id_with_repeats_is_normalised_as_sorted_and_each_tenant_once() -> None:
    tenants = _tenants(50_000)
    named = tenants + tenants[:1_000]
    random.Random(7).shuffle(named)

    assert normalized_org_id("|".join(named)) == "|".join(sorted(tenants))


def _combined_one_by_one(parts: list[TenantLimits]) -> TenantLimits:
    """What combining means, read tenant by tenant (the rule `combined_limits` states)."""
    shards = [p.max_queriers for p in parts if p.max_queriers > 0]
    capacities = [p.max_query_capacity for p in parts if p.max_query_capacity > 0]
    outstanding = [p.max_outstanding for p in parts if p.max_outstanding is not None]
    priority = next((p.query_priority for p in parts if p.query_priority.enabled), None)
    return TenantLimits(
        query_rejection=QueryRejection(
            any(p.query_rejection.enabled for p in parts),
            [
                a
                for p in parts
                if p.query_rejection.enabled
                for a in p.query_rejection.query_attributes
            ],
        ),
        max_queriers=min(shards, default=0),
        max_outstanding=min(outstanding) if outstanding else None,
        query_priority=priority if priority is not None else QueryPriority(),
        max_query_capacity=min(capacities, default=0.0),
    )


_SHARED = [
    TenantLimits(),
    TenantLimits(max_queriers=3, max_outstanding=9),
    TenantLimits(max_queriers=2, max_query_capacity=0.25),
    TenantLimits(query_priority=QueryPriority(True, (PriorityDef(priority=4),))),
    TenantLimits(query_priority=QueryPriority(True, (PriorityDef(priority=9),))),
    TenantLimits(query_rejection=QueryRejection(True, [QueryAttribute(regex="x")])),
    TenantLimits(query_rejection=QueryRejection(True, [QueryAttribute(regex="y")])),
]


@settings(derandomize=True, max_examples=300)
@given(st.lists(st.sampled_from(_SHARED), max_size=30))
def test_combining_the_same_objects_many_times_gives_what_reading_each_part_gives(
    parts: list[TenantLimits],
) -> None:
    """Parts repeat (the defaults object most of all); rejection keeps every repeat, in order."""
    assert combined_limits(parts) == _combined_one_by_one(parts)


def test_a_federated_id_of_many_unconfigured_tenants_combines_the_few_configured() -> None:
    queue = RequestQueue()
    tenants = _tenants(20_000)
    rejecting = QueryRejection(True, [QueryAttribute(regex="slow")])
    queue.set_tenant_limits(tenants[5], TenantLimits(max_queriers=4, query_rejection=rejecting))
    queue.set_tenant_limits(tenants[19_000], TenantLimits(max_queriers=2, max_outstanding=3))

    combined = org_limits(queue, "|".join(tenants))

    assert combined == TenantLimits(query_rejection=rejecting, max_queriers=2, max_outstanding=3)
