"""Readers for one raw config field each, collecting errors with their paths.

Each reader returns the clean value, or None after recording why the value
is wrong, so one pass over a whole config reports every problem at once.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from scheduler_core.bounds import INT64_MAX, int64_error
from scheduler_core.durations import InvalidDuration, parse_duration, to_milliseconds
from scheduler_core.errors import FieldError

__all__ = [
    "MAX_HINTS",
    "TYPO_CUTOFF",
    "Collector",
    "duration",
    "integer",
    "join",
    "known",
    "mapping",
    "meant_field",
    "number",
    "sequence",
    "shown",
    "text",
    "unknown",
]


class Collector:
    """Gathers every error of one parse pass instead of stopping at the first."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []
        self.hints_tried = 0  # `unknown`'s fuzzy matches this pass (see MAX_HINTS)

    def add(self, path: str, message: str) -> None:
        self.errors.append(FieldError(path or "(root)", message))


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def mapping(value: object, path: str, errs: Collector) -> Mapping[str, Any] | None:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return cast(Mapping[str, Any], value)
    errs.add(path, f"must be a mapping, got {shown(value)}")
    return None


def sequence(value: object, path: str, errs: Collector) -> Sequence[Any] | None:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return value
    errs.add(path, f"must be a list, got {shown(value)}")
    return None


def shown(value: object) -> str:
    """A refused value as an error names it: text quoted (cut at 40 characters),
    numbers as written (a huge integer by its type), others by their type.

    "got 'abc'" tells the person who typed abc in a number field what was
    wrong; "got str" only tells a programmer.
    """
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else f"{value[:40]!r}…"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"  # as JSON and YAML spell it, not Python
    if isinstance(value, float) and not math.isfinite(value):
        # "got float" for NaN, or for 1e400 (read as infinity), named nothing typed.
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, float) or (isinstance(value, int) and value.bit_length() <= 128):
        return repr(value)  # a bigger int's digits may be thousands (str() refuses past 4,300)
    named: dict[type, str] = {dict: "a mapping", list: "a list"}
    return named.get(type(value), type(value).__name__)


# A name this close to a field's is a typo of it: `query_priorty` scores 0.96
# against `query_priority`, `max_query_capacities` 0.89 against
# `max_query_capacity`, while the real limits of Cortex, Mimir and Loki
# nearest ours (`max_outstanding_per_tenant`, `max_queriers_per_user`) score
# 0.85 and 0.82.
TYPO_CUTOFF = 0.87
# A name at least this long that begins one of ours, or that one of ours
# begins (`query_reject`, `max_outstanding_requests`), is a cut or lengthened
# spelling of it; no real limit is.
_PREFIX_LENGTH = 10


def meant_field(key: str, allowed: Iterable[str]) -> str | None:
    """The field of `allowed` that `key` misspells (any case, `-` for `_`), or None."""
    names = sorted(allowed)
    spelt = key.lower().replace("-", "_")
    found = difflib.get_close_matches(spelt, names, 1, TYPO_CUTOFF)
    if not found and len(spelt) >= _PREFIX_LENGTH:
        found = [n for n in names if n.startswith(spelt) or spelt.startswith(n)][:1]
    return found[0] if found and found[0] != key else None


# Each hint is a fuzzy match (about 36 µs): a document of 500,000 misspelt
# keys took 18 s to refuse. Past this many in one pass, an unknown field is
# still named, without a "did you mean".
MAX_HINTS = 1000


def unknown(raw: Mapping[str, Any], allowed: Sequence[str], path: str, errs: Collector) -> None:
    for key in raw:
        if key not in allowed:
            meant = None
            if errs.hints_tried < MAX_HINTS:
                errs.hints_tried += 1
                meant = meant_field(str(key), allowed)
            hint = "" if meant is None else f"; did you mean {meant}?"
            errs.add(join(path, str(key)), f"unknown field{hint}")


def known(
    raw: Mapping[str, Any], allowed: Sequence[str], path: str, errs: Collector
) -> Mapping[str, Any]:
    """`raw` without its null values, once every key was checked (`unknown`).

    A null is the field unset, as Cortex's loader reads it; checked first,
    so a misspelt key set to null is still an unknown field, not dropped.
    """
    unknown(raw, allowed, path, errs)
    return {key: value for key, value in raw.items() if value is not None}


def integer(value: object, path: str, errs: Collector, minimum: int | None = None) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        errs.add(path, f"must be an integer, got {shown(value)}")
        return None
    # Cortex keeps every count and priority in an int64: a larger one is a
    # file it cannot load, so it is refused here rather than exported.
    if (problem := int64_error(value)) is not None:
        errs.add(path, problem if value.bit_length() <= 100 else "must fit a 64-bit integer")
        return None
    if minimum is not None and value < minimum:
        errs.add(path, f"must be >= {minimum}, got {value}")
        return None
    return value


def number(value: object, path: str, errs: Collector, maximum: float = INT64_MAX) -> float | None:
    """A finite, non-negative number, at most `maximum` (default: int64's range)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        errs.add(path, f"must be a finite number, got {shown(value)}")
        return None
    if (isinstance(value, int) and value.bit_length() > 100) or not math.isfinite(value):
        errs.add(path, f"must be a finite number at most {maximum:g}")
        return None
    if value < 0:
        errs.add(path, f"must not be negative, got {value}")
        return None
    if value > maximum:
        errs.add(path, f"must be at most {maximum:g}, got {value:g}")
        return None
    # -0.0 passes `< 0`; kept, it would be stored and shown as "-0.0".
    return 0.0 if value == 0 else value


def duration(value: object, path: str, errs: Collector, positive: bool = False) -> float | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        # Named as the person wrote it (null, true, a list), not as Python's repr.
        errs.add(path, f"not a duration: {shown(value)}")
        return None
    try:
        seconds = parse_duration(value)
    except InvalidDuration as exc:
        errs.add(path, str(exc))
        return None
    if seconds < 0 or (positive and seconds == 0):
        errs.add(path, f"must be {'> 0' if positive else '>= 0'}, got {value!r}")
        return None
    # Read as Cortex holds it (and as the export writes it), so a rule
    # matches here as the exported file does there. Rounded, not refused:
    # a stored block holding 0.0004 or 1.0005 must still load, and this
    # reader is also the one that loads them.
    return to_milliseconds(seconds)


def text(value: object, path: str, errs: Collector) -> str | None:
    """A string field; "" means unset, as in Cortex."""
    if value is None:
        return None
    if not isinstance(value, str):
        errs.add(path, f"must be a string, got {shown(value)}")
        return None
    return value or None
