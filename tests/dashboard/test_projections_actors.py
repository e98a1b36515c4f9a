"""Actor sub-queues in the inspector's tree, in both projections, and on the wire."""

from __future__ import annotations

from typing import Any

from dashboard.projections import SnapshotIndex, ViewParams, build_tree
from dashboard.wire import tree_from_wire, tree_to_wire
from scheduler_core.model import INGESTER, Request
from tests.fakes import clocked_queue


def tree(layout: str, expanded: set[str]) -> dict[str, Any]:
    q, _ = clocked_queue(1000.0, max_outstanding_requests_per_tenant=10_000)
    for i in range(3):
        q.enqueue(Request(id=f"j{i}", tenant_id="acme", component=INGESTER,
                          actor_path=("users", "joe")))  # fmt: skip
    q.enqueue(Request(id="a0", tenant_id="acme", component=INGESTER, actor_path=("users", "ann")))
    q.enqueue(Request(id="c0", tenant_id="acme", component=INGESTER, actor_path=("apps",)))
    q.enqueue(Request(id="own", tenant_id="acme", component=INGESTER))
    built = build_tree(
        SnapshotIndex.build(q.snapshot()), ViewParams(layout, expanded=frozenset(expanded))
    )  # type: ignore[arg-type]
    assert tree_from_wire(tree_to_wire(built)) == built  # the browser derives the same keys
    return built


def shape(nodes: list[dict[str, Any]]) -> list[Any]:
    return [(n["kind"], n["name"], n["length"], shape(n["children"])) for n in nodes]


EXPECTED = [
    ("own", "(no actor)", 1, []),
    ("actor", "users", 4, [("actor", "joe", 3, []), ("actor", "ann", 1, [])]),
    ("actor", "apps", 1, []),
]


def test_tenant_first_shows_actor_levels_under_the_tenants_component() -> None:
    built = tree("tenant-first", {"t:acme", f"t:acme/{INGESTER}"})
    (acme,) = built["nodes"]
    (leaf,) = acme["children"]
    assert shape(leaf["children"]) == EXPECTED
    assert leaf["children"][1]["children"][0]["key"] == f"t:acme/{INGESTER}/a:users/a:joe"


def test_component_first_shows_actor_levels_under_the_components_tenant() -> None:
    built = tree("component-first", {f"c:{INGESTER}", f"c:{INGESTER}/acme"})
    (acme,) = built["nodes"][0]["children"]
    assert shape(acme["children"]) == EXPECTED


def test_a_collapsed_leaf_with_actors_says_it_has_children() -> None:
    built = tree("tenant-first", {"t:acme"})
    (leaf,) = built["nodes"][0]["children"]
    assert leaf["children"] == [] and leaf["fanout"] > 0
