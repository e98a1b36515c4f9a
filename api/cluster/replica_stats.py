"""The inspector header's stats across replicas: rates summed, waits worst-of, the busiest loop.

Each replica publishes its own figures (`local_stats`) with its summary; the
reader merges them with its own (`merge_stats`). Percentiles cannot be summed
from summaries, and loads do not add up: a service of replicas saturates
where its busiest event loop does, so the merged header shows that replica's
`load` block (`api.wire.loop_load.load_block`, passed in by the host) and
names it. A peer's figures come from Redis and may be from another version,
so a block with anything but the fields this version writes is passed over.
Pure and unit-tested, like `api.cluster.replicas`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from api.cluster.replica_frontends import FrontendRow
from api.cluster.replica_usage import PUBLISHED_ROWS, is_figure, merge_usage
from api.cluster.replicas import PeerSummary

__all__ = [
    "MAX_FRONTEND_ADDRESSES",
    "WEBSOCKET_NAME_PREFIX",
    "busiest",
    "grpc_frontend_addresses",
    "host_stats",
    "local_stats",
    "merge_stats",
    "worst_wait",
]


def _worst_waits(tables: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for table in tables:
        for key, (p50, p99, n) in table.items():
            seen = out.get(key)
            if seen is None:
                out[key] = [p50, p99, n]
            else:
                out[key] = [max(seen[0], p50), max(seen[1], p99), seen[2] + n]
    return dict(sorted(out.items()))


def merge_stats(
    local: Mapping[str, Any] | None, peers: Sequence[PeerSummary], own_id: str = ""
) -> dict[str, Any] | None:
    """Header stats for the whole service: rates and frontends summed, waits worst-of.

    Percentiles cannot be summed from summaries, so each wait row shows the
    worst replica's p50 and p99 (an upper bound, the figure on-call needs)
    and the total sample count. The event loop's load is the busiest
    replica's (`own_id` names this one).
    """
    if local is None:
        return None
    every = [dict(local), *(dict(p.stats) for p in peers if p.stats)]
    rates: dict[str, float] = {}
    for stats in every:
        for kind, rate in _valid(stats.get("rates"), is_figure).items():
            rates[kind] = round(rates.get(kind, 0.0) + float(rate), 2)
    by_component = _worst_waits(_valid(s.get("wait_by_component"), _is_wait) for s in every)
    return {
        **local,
        "rates": rates,
        "frontends": _distinct_frontends(every),
        "wait_by_component": by_component,
        "wait_by_priority": _worst_waits(
            _valid(s.get("wait_by_priority"), _is_wait) for s in every
        ),
        "wait": worst_wait(by_component),
        "usage": merge_usage((s.get("usage") for s in every), PUBLISHED_ROWS),
        "load": busiest(
            [(own_id, local.get("load")), *((p.replica, p.stats.get("load")) for p in peers)]
        ),
    }


def _valid(table: Any, is_value: Callable[[Any], bool]) -> Mapping[str, Any]:
    """`table` if it maps names to values `is_value` accepts, else nothing.

    A peer's rates and wait tables come from Redis and may be another
    version's (or garbled): one bad row broke the merged header of every
    replica's inspector, so the whole table is passed over instead.
    """
    if isinstance(table, Mapping) and all(
        isinstance(key, str) and is_value(value) for key, value in table.items()
    ):
        return table
    return {}


def _is_wait(row: Any) -> bool:
    """A wait row as `local_stats` writes it: [p50, p99, samples]."""
    return isinstance(row, list | tuple) and len(row) == 3 and all(is_figure(x) for x in row)


def local_stats(
    stats: Any,
    *,
    frontends: int,
    window: float = 60.0,
    load: Mapping[str, Any] | None = None,
    frontend_addresses: Iterable[str] = (),
    usage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A replica's own figures from its `RollingStats`, in the header's stats shape.

    `load` is its event loop's block (`api.wire.loop_load.load_block`), `{}` if none;
    `usage` its busiest tenants by querier time (`api.wire.usage_block`), or None.
    `frontend_addresses` are those of its `frontends` that other replicas
    may see too (gRPC frontends' own addresses), so the merged header counts
    each once; the first `MAX_FRONTEND_ADDRESSES` of them are published.
    """

    def waits(summaries: Mapping[Any, Any]) -> dict[str, list[float]]:
        return {str(k): [round(s.p50, 6), round(s.p99, 6), s.samples] for k, s in summaries.items()}

    return {
        "window": window,
        "rates": {k: round(v, 2) for k, v in stats.rates(window).items()},
        "wait_by_component": waits(stats.wait_by_component(window)),
        "wait_by_priority": waits(stats.wait_by_priority(window)),
        "frontends": frontends,
        "frontend_addresses": sorted(set(frontend_addresses))[:MAX_FRONTEND_ADDRESSES],
        "load": dict(load or {}),
        "usage": None if usage is None else dict(usage),
    }


def worst_wait(by_component: Mapping[str, Sequence[float]]) -> dict[str, float] | None:
    """The chart's wait line: the worst component's p50 and p99, by p99.

    The figure that tells an on-call engineer something is backing up.
    """
    worst = max(by_component.values(), key=lambda row: row[1], default=None)
    return None if worst is None else {"p50": worst[0], "p99": worst[1]}


def host_stats(host: Any, frontends: Sequence[FrontendRow]) -> dict[str, Any]:
    """This replica's `local_stats` from its runtime host and its frontends' rows."""
    names = host.websocket_frontends.names()
    return local_stats(
        host.stats,
        frontends=len(frontends),
        load=host.load(),
        usage=host.usage_block(),
        frontend_addresses=[
            *grpc_frontend_addresses(frontends),
            *(WEBSOCKET_NAME_PREFIX + name for name in names),
        ],
    )


def grpc_frontend_addresses(rows: Iterable[FrontendRow]) -> list[str]:
    """The addresses of `rows` that name one frontend on every replica: gRPC ones.

    A Cortex frontend sends the address queriers answer it on, the same to
    every scheduler. A websocket frontend's row has its socket's peer, or
    the name it gave; `host_stats` publishes those names from the host.
    """
    return [row.address for row in rows if row.transport == "grpc"]


# Enough for every frontend of a large cluster; past it, the rest count once per replica.
MAX_FRONTEND_ADDRESSES = 1000
# A named websocket frontend's published identity: `ws/` cannot start a gRPC
# host:port, so a name never meets a Cortex frontend's address.
WEBSOCKET_NAME_PREFIX = "ws/"


def _distinct_frontends(every: Sequence[Mapping[str, Any]]) -> int:
    """Frontends across replicas: a gRPC frontend connected to several counts once.

    Cortex frontends open streams to every scheduler address they are given,
    so summing the replicas' counts would count each of them once per
    replica. Each replica's count less the addresses it published are the
    frontends with no identity across replicas (websocket connections, and
    any past the cap); those add up, the addresses are counted as a set.
    A peer's figures that are not a count and a list of strings count as
    nothing, rather than break the header.
    """
    anonymous = 0
    addresses: set[str] = set()
    for stats in every:
        count = stats.get("frontends")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            continue
        published = stats.get("frontend_addresses")
        own = (
            set(published)
            if isinstance(published, list) and all(isinstance(a, str) for a in published)
            else set()
        )
        if len(own) > count:
            own = set()
        anonymous += count - len(own)
        addresses |= own
    return anonymous + len(addresses)


_NUMBERS = ("window", "busy", "process_cpu", "lag_max", "dispatched")


def busiest(blocks: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Of (replica, `load` block) pairs, the busiest well-formed block (`{}` for none).

    With more than one well-formed block, the chosen one names its `replica`.
    """
    valid = [(replica, block) for replica, block in blocks if _well_formed(block)]
    if not valid:
        return {}
    replica, block = max(valid, key=lambda pair: pair[1]["busy"])
    chosen = {k: block[k] for k in (*_NUMBERS, "cpu_per_query_us") if k in block}
    if len(valid) > 1:
        chosen["replica"] = replica
    return chosen


def _well_formed(block: Any) -> bool:
    if not isinstance(block, Mapping):
        return False
    if not all(is_figure(block.get(k)) for k in _NUMBERS) or block["busy"] > 1:
        return False
    per_query = block.get("cpu_per_query_us")
    return per_query is None or is_figure(per_query)
