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


def busiest(blocks: Iterable[Any]) -> dict[str, Any]:
    """Of several replicas' `load` blocks, the busiest well-formed one (`{}` for none).

    A peer's block comes from Redis and may be from another version, so
    anything but the fields this version writes is passed over.
    """
    valid = [b for b in blocks if _well_formed(b)]
    return dict(max(valid, key=lambda b: b["busy"])) if valid else {}


def _well_formed(block: Any) -> bool:
    if not isinstance(block, Mapping):
        return False
    if not all(_is_number(block.get(k)) for k in _NUMBERS):
        return False
    per_query = block.get("cpu_per_query_us")
    return per_query is None or _is_number(per_query)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
