"""A small structural diff of JSON values, for revisions and import previews.

Paths use the validator's spelling (`query_priority.priorities[1].priority`)
so a diff line and a validation error about the same field read alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Change", "structural_diff"]


@dataclass(frozen=True, slots=True)
class Change:
    """One leaf that differs; `before`/`after` is None where the field is absent."""

    path: str
    before: Any
    after: Any


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def structural_diff(before: Any, after: Any, path: str = "") -> list[Change]:
    """Every changed leaf between two JSON values, in document order.

    Mappings are compared key by key and lists index by index, so changing
    one attribute of one priority shows as one line rather than the whole
    list; a value whose type changes is reported whole.
    """
    if isinstance(before, dict) and isinstance(after, dict):
        changes: list[Change] = []
        keys = list(before) + [key for key in after if key not in before]
        for key in keys:
            changes += structural_diff(before.get(key), after.get(key), _join(path, str(key)))
        return changes
    if isinstance(before, list) and isinstance(after, list):
        changes = []
        for index in range(max(len(before), len(after))):
            old = before[index] if index < len(before) else None
            new = after[index] if index < len(after) else None
            changes += structural_diff(old, new, f"{path}[{index}]")
        return changes
    if before == after and type(before) is type(after):
        return []
    return [Change(path or "(root)", before, after)]
