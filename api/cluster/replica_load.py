"""Which replica's event loop is busiest: the inspector header's `load` across replicas.

Each replica publishes its own `load` block (`api.wire.loop_load.load_block`,
passed in by the host) with its summary. Loads do not add up: a service of
replicas saturates where its busiest loop does, so the merged header shows
that replica's block. Imports nothing of this project.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["busiest"]

_NUMBERS = ("window", "busy", "process_cpu", "lag_max", "dispatched")


def busiest(blocks: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Of (replica, `load` block) pairs, the busiest well-formed block (`{}` for none).

    With more than one well-formed block, the chosen one names its `replica`.
    A peer's block comes from Redis and may be from another version, so
    anything but the fields this version writes is passed over.
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
    if not all(_is_number(block.get(k)) for k in _NUMBERS) or block["busy"] > 1:
        return False
    per_query = block.get("cpu_per_query_us")
    return per_query is None or _is_number(per_query)


def _is_number(value: Any) -> bool:
    """A finite number, not negative: every figure of the block is a rate or a share."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )
