"""Prometheus duration strings ("1h30m", "2h", "0s") to seconds and back.

A duration Cortex could not load (beyond Go's time.Duration, about 292
years: `scheduler_core.bounds`) is refused here, whether spelled as a string
or as a number of seconds; `format_duration` takes any float, so a message
about a value never fails to print. Cortex holds a limit's duration as a
`model.Duration`, whose text has no unit below the millisecond:
`to_milliseconds` is how a number of seconds becomes one.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

import re2

from scheduler_core.bounds import MAX_DURATION_SECONDS, duration_error

__all__ = [
    "InvalidDuration",
    "duration_text_ms",
    "format_duration",
    "parse_duration",
    "to_milliseconds",
]

_MAX_DURATION_MS = int(MAX_DURATION_SECONDS * 1000)

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
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidDuration(f"not a finite duration: {value!r}")
        if (problem := duration_error(value)) is not None:
            raise InvalidDuration(f"duration out of range: {_shown(value)} {problem}")
        return float(value)
    if not isinstance(value, str):
        raise InvalidDuration(f"not a duration: {value!r}")
    # Divided, not multiplied by 0.001: "1s1ms" is then the float 1.001 a
    # number of seconds written 1.001 is, to every later comparison.
    return duration_text_ms(value) / 1000


def duration_text_ms(value: str) -> int:
    """Whole milliseconds of a Prometheus duration string ("1h30m", "0"), as
    its `model.ParseDuration` reads them: counted exactly, since float
    seconds would not be ("1s1ms" is 1.001 s, and 1.001 * 1000 is
    1000.999..., which a reader truncating to the millisecond takes as 1s)."""
    if value == "0":
        return 0
    match = _DURATION_RE.fullmatch(value) if value else None
    if match is None:
        raise InvalidDuration(f'not a valid duration string: "{value}" (e.g. "2h", "1h30m", "0s")')
    # A number of more than 19 digits is out of range in any unit, and
    # int() of thousands of digits would itself refuse (and cost) too much.
    groups = match.groups()
    too_long = any(group is not None and len(group) > 19 for group in groups)
    total_ms = 0
    if not too_long:
        total_ms = sum(
            int(group) * mult
            for group, (_, mult, _) in zip(groups, _UNITS, strict=True)
            if group is not None
        )
    if too_long or total_ms > _MAX_DURATION_MS:
        shown = value if len(value) <= 40 else f"{value[:37]}..."
        raise InvalidDuration(f'duration out of range: "{shown}" {duration_error(math.inf)}')
    return total_ms


def to_milliseconds(seconds: float) -> float:
    """A finite number of seconds as the whole milliseconds Cortex can hold.

    The nearest millisecond, a half away from zero, of the number as written
    (its shortest repr): 1.0005 is 1.001 s and 1.0025 is 1.003 s, where
    round() of the float times 1000 gives 1 s and 1.002 s. A nonzero
    duration is at least 1ms: zero means "unset" to a limit's bound, so
    rounding a bound of 0.0004 down to it would turn a set bound into none,
    and a positive setting into one the rules refuse.
    """
    ms = int(Decimal(repr(seconds)).scaleb(3).to_integral_value(ROUND_HALF_UP))
    if ms == 0 and seconds:
        ms = 1 if seconds > 0 else -1
    return ms / 1000


def _shown(value: float) -> str:
    """A number short enough for a message (repr of a huge int may even refuse)."""
    if isinstance(value, int) and value.bit_length() > 100:
        return f"a number of about {int(value.bit_length() * 0.30103)} digits"
    return repr(value)


def format_duration(seconds: float) -> str:
    """The canonical Prometheus spelling of a duration, to the millisecond.

    Total over floats: infinities and NaN print as "+Inf", "-Inf", "NaN".
    """
    if not math.isfinite(seconds * 1000):
        return "NaN" if math.isnan(seconds) else ("-Inf" if seconds < 0 else "+Inf")
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
