"""The inspector's compact wire encoding of tree nodes and querier workers.

A view is sent a few times a second to every open inspector, so its size is
the budget that matters (about 50 KB/s per browser). Nodes and workers go as
positional arrays instead of objects, and a node's key is not sent: the
browser derives it from the projection and the parent, exactly as
`dashboard.projections` builds it (`t:acme`, `t:acme/ingester`, `t/others`;
`c:ingester`, `c:ingester/acme`, `c:ingester/others`). `static/dashboard/
wire.js` is the decoder; `tree_from_wire` is its Python twin.

Node: [kind, name, length, by_priority flat [p, c, ...], oldest_wait, fanout,
count, children]; kind is "t" tenant, "c" component, "o" others, and
under a leaf "a" actor sub-queue (key `<parent>/a:<name>`), "x" the actors
summed as others (`<parent>/others`), "n" the leaf's own requests with no
actor path (`<parent>/own`).
Worker: [id, state, tenant, component, priority, for, request]; state "b"
busy, "i" idle, "w" waiting; request is the busy worker's request id (the
inspector opens it on a click), else null.
Frontend: [transport, address, name, streams, outstanding, for, replica?];
transport "w" websocket, "g" gRPC; the replica ID is appended only in the
merged (several replicas) panel, whose panel object also gains `replicas`
and `missing`, so a single-replica frame is byte for byte what it was.
Every section and frame is JSON without spaces (`dumps`).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "dumps",
    "frontends_from_wire",
    "frontends_to_wire",
    "queriers_to_wire",
    "tree_from_wire",
    "tree_to_wire",
]

_KINDS = {
    "tenant": "t",
    "component": "c",
    "others": "o",
    "actor": "a",
    "actor-others": "x",
    "own": "n",
}
_COUNTED = frozenset({"o", "x"})  # kinds that carry a count instead of a fanout
_KIND_NAMES = {v: k for k, v in _KINDS.items()}
_STATES = {"busy": "b", "idle": "i", "waiting": "w"}
_TRANSPORTS = {"websocket": "w", "grpc": "g"}
_TRANSPORT_NAMES = {v: k for k, v in _TRANSPORTS.items()}
_FRONTEND_FIELDS = ("transport", "address", "name", "streams", "outstanding", "for")
_MERGED_FRONTEND_FIELDS = (*_FRONTEND_FIELDS, "replica")


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _node(node: dict[str, Any]) -> list[Any]:
    flat = [x for pair in node["by_priority"] for x in pair]
    children = [_node(c) for c in node.get("children") or ()]
    return [
        _KINDS[node["kind"]],
        node["name"],
        node["length"],
        flat,
        node["oldest_wait"],
        node.get("fanout", 0),
        node.get("count", 0),
        children,
    ]


def tree_to_wire(tree: dict[str, Any]) -> dict[str, Any]:
    return {**tree, "nodes": [_node(n) for n in tree["nodes"]]}


def _key(kind: str, name: str, parent: str | None, prefix: str) -> str:
    if kind in _COUNTED:
        return f"{parent or prefix}/others"
    if kind == "a":
        return f"{parent}/a:{name}"
    if kind == "n":
        return f"{parent}/own"
    return f"{parent}/{name}" if parent else f"{prefix}:{name}"


def _unnode(raw: list[Any], parent: str | None, prefix: str) -> dict[str, Any]:
    kind, name, length, flat, oldest, fanout, count, children = raw
    key = _key(kind, name, parent, prefix)
    node: dict[str, Any] = {
        "kind": _KIND_NAMES[kind],
        "key": key,
        "name": name,
        "length": length,
        "by_priority": [list(flat[i : i + 2]) for i in range(0, len(flat), 2)],
        "oldest_wait": oldest,
        "children": [_unnode(c, key, prefix) for c in children],
    }
    if kind in _COUNTED:
        node["count"] = count
    else:
        node["fanout"] = fanout
    return node


def tree_from_wire(wire: dict[str, Any]) -> dict[str, Any]:
    """The tree as `build_tree` made it, from its wire form."""
    prefix = "c" if wire["projection"] == "component-first" else "t"
    return {**wire, "nodes": [_unnode(n, None, prefix) for n in wire["nodes"]]}


def _worker(worker: dict[str, Any]) -> list[Any]:
    return [
        worker["id"],
        _STATES[worker["state"]],
        worker.get("tenant"),
        worker.get("component"),
        worker.get("priority"),
        worker["for"],
        worker.get("request"),
    ]


def queriers_to_wire(panel: dict[str, Any]) -> dict[str, Any]:
    queriers = [{**q, "workers": [_worker(w) for w in q["workers"]]} for q in panel["queriers"]]
    return {**panel, "queriers": queriers}


def frontends_to_wire(panel: dict[str, Any]) -> dict[str, Any]:
    """Rows as arrays: the panel is resent whenever an outstanding count moves."""
    rows = [
        [
            _TRANSPORTS[f["transport"]],
            *(f[k] for k in _FRONTEND_FIELDS[1:]),
            *((f["replica"],) if "replica" in f else ()),
        ]
        for f in panel["frontends"]
    ]
    return {**panel, "frontends": rows}


def frontends_from_wire(wire: dict[str, Any]) -> dict[str, Any]:
    """The panel as `build_frontends` made it, from its wire form."""
    rows = [_unfrontend(raw) for raw in wire["frontends"]]
    return {**wire, "frontends": rows}


def _unfrontend(raw: list[Any]) -> dict[str, Any]:
    fields = _FRONTEND_FIELDS if len(raw) == len(_FRONTEND_FIELDS) else _MERGED_FRONTEND_FIELDS
    row = dict(zip(fields, raw, strict=True))
    return {**row, "transport": _TRANSPORT_NAMES[raw[0]]}
