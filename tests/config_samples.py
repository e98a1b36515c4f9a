"""A tenant block setting every field the validator knows, found by asking the validator.

The round-trip tests (YAML view, form) run over these samples, so a field
added to `scheduler_core.validation` is covered without editing them: each
top-level key of `TENANT_KEYS` and each query-attribute field takes the
first candidate value the validator accepts. A field of a new shape that no
candidate fits fails loudly here, naming the field, rather than going
untested. `empty_variants` swaps each value for null, "", [] and {} where
the validator accepts that, so empty and unset fields are covered too.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from scheduler_core import validation
from scheduler_core.validation import TENANT_KEYS, validate_tenant_config

__all__ = ["empty_variants", "full_sample", "leaves"]


def _accepted(config: dict[str, Any]) -> bool:
    return not validate_tenant_config(config)


def _attribute_sample() -> dict[str, Any]:
    # The validator's own table of attribute fields (shared by every rule kind).
    keys = tuple(validation._ATTRIBUTE_FIELDS)  # noqa: SLF001
    attr: dict[str, Any] = {}
    for key in keys:
        candidates = [
            {"start": "2h", "end": "30m"},
            {"min": "5m", "max": "1h"},
            f"{key}-sample",
            "query_range",
        ]
        for candidate in candidates:
            probe = {
                "query_priority": {
                    "priorities": [{"priority": 1, "query_attributes": [{key: candidate}]}]
                }
            }
            if _accepted(probe):
                attr[key] = candidate
                break
        else:
            raise AssertionError(f"no sample value fits the new attribute field {key!r}")
    return attr


def full_sample() -> dict[str, Any]:
    """Every tenant field set, every attribute field set in some attribute."""
    attr = _attribute_sample()
    rules = {
        "enabled": True,
        "default_priority": 2,
        "priorities": [
            {
                "priority": 7,
                "reserved_queriers": 0.5,
                "query_attributes": [attr, {"regex": "second-attribute"}],
            },
            {"priority": 3, "reserved_queriers": 2, "query_attributes": [{"api_type": "series"}]},
        ],
    }
    rejection = {"enabled": True, "query_attributes": [attr, {"regex": "reject-this"}]}
    sample: dict[str, Any] = {}
    for index, key in enumerate(TENANT_KEYS):
        for candidate in (rules, rejection, 0.25, 3 + index):
            if _accepted({key: copy.deepcopy(candidate)}):
                sample[key] = copy.deepcopy(candidate)
                break
        else:
            raise AssertionError(f"no sample value fits the new tenant field {key!r}")
    assert _accepted(sample), validate_tenant_config(sample)
    return sample


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(path, value) of every scalar in a block, in the validator's path spelling."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaves(item, f"{path}[{index}]")
    else:
        yield path, value


def _replace(config: Any, trail: list[Any], new: Any) -> Any:
    copied = copy.deepcopy(config)
    target = copied
    for step in trail[:-1]:
        target = target[step]
    target[trail[-1]] = new
    return copied


def _trails(value: Any, trail: list[Any]) -> Iterator[list[Any]]:
    if trail:
        yield trail
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _trails(item, [*trail, key])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _trails(item, [*trail, index])


def empty_variants(sample: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The sample with one field null or empty, for every field that may be."""
    found = []
    for trail in _trails(sample, []):
        for empty in (None, "", [], {}):
            variant = _replace(sample, trail, empty)
            if variant != sample and _accepted(variant):
                path = "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in trail)
                found.append((f"{path.lstrip('.')}={empty!r}", variant))
    return found
