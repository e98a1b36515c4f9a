"""Prometheus duration strings ("1h30m", "2h", "0s") to seconds and back."""

from __future__ import annotations

import math

import re2

__all__ = ["InvalidDuration", "format_duration", "parse_duration"]

_MS = 0.001
# Prometheus units, largest first; the flag says the unit is only printed
# when it divides the duration exactly (as Prometheus prints 8d, not 1w1d).
_UNITS: tuple[tuple[str, int, bool], ...] = (
    ("y", 365 * 86_400_000, True),
    ("w", 7 * 86_400_000, True),
    ("d", 86_400_000, False),
    ("h", 3_600_000, False),
    ("m", 60_000, False),
    ("s", 1_000, False),
    ("ms", 1, False),
)
_DURATION_RE = re2.compile(
    r"(?:([0-9]+)y)?(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?"
    r"(?:([0-9]+)m)?(?:([0-9]+)s)?(?:([0-9]+)ms)?"
)


class InvalidDuration(ValueError):
    """A value is neither a Prometheus duration string nor a number of seconds."""


def parse_duration(value: object) -> float:
    """Seconds from a Prometheus duration ("1h30m", "0") or a number of seconds."""
    if isinstance(value, bool):
        raise InvalidDuration(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise InvalidDuration(f"not a finite duration: {value!r}")
        return float(value)
    if not isinstance(value, str):
        raise InvalidDuration(f"not a duration: {value!r}")
    if value == "0":
        return 0.0
    match = _DURATION_RE.fullmatch(value) if value else None
    if match is None:
        raise InvalidDuration(f'not a valid duration string: "{value}" (e.g. "2h", "1h30m", "0s")')
    total_ms = sum(
        int(group) * mult
        for group, (_, mult, _) in zip(match.groups(), _UNITS, strict=True)
        if group is not None
    )
    return total_ms * _MS


def format_duration(seconds: float) -> str:
    """The canonical Prometheus spelling of a duration, to the millisecond."""
    ms = round(abs(seconds) * 1000)
    if ms == 0:
        return "0s"
    parts: list[str] = []
    for unit, mult, exact in _UNITS:
        if exact and ms % mult:
            continue
        count, ms = divmod(ms, mult)
        if count:
            parts.append(f"{count}{unit}")
    return ("-" if seconds < 0 else "") + "".join(parts)
