"""Querier time per tenant across replicas: the block's shape and its merge.

Each replica publishes its busiest tenants by querier time with its summary
(`api.wire.usage_block` builds the block on the loop); `merge_usage` sums
them per tenant for the merged inspector and `GET queue/usage/`. A peer's
block comes from Redis and may be another version's, so one with anything
but the fields this version writes is passed over. Pure and unit-tested.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "PUBLISHED_ROWS",
    "ROW_FIELDS",
    "finish_block",
    "is_figure",
    "merge_usage",
    "rows_within",
]

# The busiest tenants each replica publishes with its summary, and the most a
# merged answer can list from a peer.
PUBLISHED_ROWS = 50
ROW_FIELDS = (
    "tenant",
    "querier_seconds",
    "dispatched",
    "ended",
    "running",
    "wait_mean_seconds",
    "wait_max_seconds",
    "rejected",
)
_SUMMED = ("querier_seconds", "dispatched", "ended", "running", "rejected")


def finish_block(block: dict[str, Any]) -> dict[str, Any]:
    """Rounds the seconds and adds what each row's figures mean beside the whole.

    `share` is the row's part of all tenants' querier time; `workers_held`
    how many worker connections it held on average over the span.
    """
    total, span = block["querier_seconds"], block["span_seconds"]
    block["querier_seconds"] = round(total, 3)
    for row in block["tenants"]:
        seconds = row["querier_seconds"]
        row["querier_seconds"] = round(seconds, 3)
        row["share"] = round(seconds / total, 4) if total > 0 else 0.0
        row["workers_held"] = round(seconds / span, 3) if span > 0 else 0.0
    return block


def merge_usage(blocks: Iterable[Mapping[str, Any]], limit: int) -> dict[str, Any] | None:
    """Several replicas' blocks as one: per tenant summed, the busiest `limit` kept.

    Each replica's worker connections are its own (a Cortex querier opens
    its workers to every scheduler), so they add up too. A peer lists only
    its busiest tenants, so `tenant_count` is the most any replica saw, or
    the tenants listed if more: a lower bound. A block missing any field
    this version writes (another version's, or none) is passed over.
    """
    valid = [b for b in blocks if _well_formed(b)]
    if not valid:
        return None
    rows: dict[str, dict[str, Any]] = {}
    for block in valid:
        for row in block["tenants"]:
            seen = rows.get(row["tenant"])
            if seen is None:
                rows[row["tenant"]] = {k: row[k] for k in ROW_FIELDS}
                rows[row["tenant"]]["wait_sum"] = row["wait_mean_seconds"] * row["dispatched"]
                continue
            for key in _SUMMED:
                seen[key] += row[key]
            seen["wait_sum"] += row["wait_mean_seconds"] * row["dispatched"]
            seen["wait_max_seconds"] = max(seen["wait_max_seconds"], row["wait_max_seconds"])
    for row in rows.values():
        wait_sum, dispatched = row.pop("wait_sum"), row["dispatched"]
        row["wait_mean_seconds"] = round(wait_sum / dispatched, 6) if dispatched else 0.0
    ordered = sorted(
        rows.values(), key=lambda r: (-r["querier_seconds"], -r["dispatched"], r["tenant"])
    )
    return finish_block(
        {
            "window_seconds": max(b["window_seconds"] for b in valid),
            "span_seconds": max(b["span_seconds"] for b in valid),
            "querier_seconds": sum(b["querier_seconds"] for b in valid),
            "workers": sum(b["workers"] for b in valid),
            "tenant_count": max(len(rows), *(b["tenant_count"] for b in valid)),
            "tenants": ordered[:limit],
        }
    )


def rows_within(block: Mapping[str, Any], max_id_chars: int) -> dict[str, Any]:
    """The block without its rows under org IDs longer than `max_id_chars`.

    Its totals and `tenant_count` still count them, as they count the
    tenants past the busiest `PUBLISHED_ROWS`.
    """
    rows = block["tenants"]
    return {**block, "tenants": [r for r in rows if len(r["tenant"]) <= max_id_chars]}


def is_figure(value: Any) -> bool:
    """A finite number, not negative: what every figure a replica publishes is."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def _well_formed(block: Any) -> bool:
    if not isinstance(block, Mapping):
        return False
    heads = ("window_seconds", "span_seconds", "querier_seconds", "workers", "tenant_count")
    if not all(is_figure(block.get(k)) for k in heads):
        return False
    tenants = block.get("tenants")
    return isinstance(tenants, list) and all(
        isinstance(row, Mapping)
        and isinstance(row.get("tenant"), str)
        and all(is_figure(row.get(k)) for k in ROW_FIELDS[1:])
        for row in tenants
    )
