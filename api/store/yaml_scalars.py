"""What a YAML scalar means to Cortex's loader: gopkg.in/yaml.v2's resolution, in Python.

Cortex v1.15.3 decodes its runtime-config with yaml.v2 (`resolve.go`), a
YAML 1.1 reading that differs from PyYAML's in both directions, so the
strict loader (`api.store.yaml_keys`) resolves every plain scalar here:

- Booleans: `y`, `Y`, `n` and `N` too (PyYAML: text), besides yes/no,
  true/false and on/off in their three spellings.
- Integers as Go's `strconv.ParseInt(text, 0, 64)` reads them once every
  `_` is removed: `0o17` and `0O17`, `0X1F` and `0B101` too (PyYAML: text,
  or an error); a leading 0 is octal (`017` is 15). One that does not fit
  an int64 but fits a uint64 is still an integer.
- Floats: any `[-+]?(.N|N[.N])([eE][-+]?N)` once `_` is removed, so `1e3`,
  `1.5e3`, `+.5` and `08` (not octal, so 8.0) are numbers (PyYAML: text).
  A float that overflows (`1e400`) is text, as Go's `ParseFloat` error
  leaves it. One that starts with `.` is read by `ParseFloat` as written:
  `.5_0` is 0.5, `.5__0` and `._5` are text.
- Nulls: `~`, `null`, `Null`, `NULL` and the empty scalar.
- Everything else is text: base-60 (`1:20`), `=` (PyYAML's "value" tag,
  which no constructor reads) and dates: yaml.v2 hands a date to every
  target but a `time.Time` as its text, and no limit is a `time.Time`. A
  date-like text is never a number either, so dropping the check changes
  no other reading.

A key is read as its text whatever it resolves to (Go decodes it into a
string: `yes:` is the tenant "yes", `1e3:` the tenant "1e3"); that rule is
the loader's. An explicit tag must agree with this resolution, except that
`!!float` takes an integer, as Go's `resolve` allows (`go_value`).

`int_field_value` is the one reading a field's type adds: Cortex's
integer limits (`INT_FIELDS`) take a float that holds a whole number, so
`max_outstanding_requests_per_tenant: 1e3` is 1000.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = [
    "BOOL_TAG",
    "FLOAT_TAG",
    "INT_FIELDS",
    "INT_TAG",
    "NULL_TAG",
    "STR_TAG",
    "Undecodable",
    "go_value",
    "int_field_value",
    "resolve_plain",
    "short_tag",
]

_TAG = "tag:yaml.org,2002:"
STR_TAG = _TAG + "str"
INT_TAG = _TAG + "int"
FLOAT_TAG = _TAG + "float"
BOOL_TAG = _TAG + "bool"
NULL_TAG = _TAG + "null"

# The fields Cortex declares as int or int64 (`max_queriers_per_tenant` and
# `max_outstanding_requests_per_tenant` in v1.15.3's `Limits`; `priority`
# and `default_priority` in the later Cortex's query priority).
INT_FIELDS = frozenset(
    {"max_queriers_per_tenant", "max_outstanding_requests_per_tenant", "priority"}
    | {"default_priority"}
)

# resolve.go's table of words, read before any number.
_TRUE = ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")
_FALSE = ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")
_INF = (".inf", ".Inf", ".INF")
_WORDS: dict[str, tuple[str, Any]] = {
    **{word: (BOOL_TAG, True) for word in _TRUE},
    **{word: (BOOL_TAG, False) for word in _FALSE},
    **{word: (NULL_TAG, None) for word in ("", "~", "null", "Null", "NULL")},
    **{word: (FLOAT_TAG, math.nan) for word in (".nan", ".NaN", ".NAN")},
    **{sign + word: (FLOAT_TAG, math.inf) for sign in ("", "+") for word in _INF},
    **{"-" + word: (FLOAT_TAG, -math.inf) for word in _INF},
}
# The first characters resolve.go looks further at; a scalar starting with
# any other (a letter but these, `_`, `=`, `<`) is text, not even a word.
_HINTED = frozenset("+-0123456789yYnNtTfFoO~.")
_NUMBER_START = frozenset("+-0123456789")
_INT64 = 1 << 63
_UINT64 = 1 << 64
# More significant digits than this overflow a uint64 in any base.
_MAX_DIGITS = 64
_PREFIX_BASES = {"b": 2, "o": 8, "x": 16}
_DIGITS = {
    2: re.compile(r"[01]*"),
    8: re.compile(r"[0-7]*"),
    10: re.compile(r"[0-9]*"),
    16: re.compile(r"[0-9a-fA-F]*"),
}
# resolve.go's `yamlStyleFloat`, matched once `_` is removed.
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
# What `strconv.ParseFloat` reads of a text starting with `.`: Go's float
# literal syntax, where a `_` stands between two digits.
_DOT_FLOAT = re.compile(r"\.[0-9](?:_?[0-9])*(?:[eE][-+]?[0-9](?:_?[0-9])*)?")


class Undecodable(ValueError):
    """An explicit tag its scalar does not resolve to (yaml.v2: "cannot decode")."""


def short_tag(tag: str) -> str:
    """A tag as it is written: `!!int`."""
    return f"!!{tag[len(_TAG) :]}" if tag.startswith(_TAG) else tag


def _parse_uint(text: str, base: int = 0) -> int | None:
    """`strconv.ParseUint(text, base, 64)` of a text without `_` (base 0 or 2)."""
    if not text:
        return None
    digits = text
    if base == 0:
        base = 10
        if text[0] == "0":
            prefixed = len(text) >= 3 and text[1].lower() in _PREFIX_BASES
            base = _PREFIX_BASES[text[1].lower()] if prefixed else 8
            digits = text[2:] if prefixed else text[1:]
    if not _DIGITS[base].fullmatch(digits):
        return None
    # Leading zeros count for nothing (Go reads 100 of them then `17` as 15);
    # past 64 significant digits int() would only spend time on an overflow.
    significant = digits.lstrip("0")
    if len(significant) > _MAX_DIGITS:
        return None
    value = int(significant or "0", base)
    return value if value < _UINT64 else None


def _parse_int(text: str, base: int = 0) -> int | None:
    """`strconv.ParseInt(text, base, 64)`: one optional sign, then as `_parse_uint`."""
    negative = text[:1] == "-"
    magnitude = _parse_uint(text[1:] if text[:1] in ("+", "-") else text, base)
    if magnitude is None or magnitude > _INT64 or (magnitude == _INT64 and not negative):
        return None
    return -magnitude if negative else magnitude


def _finite(text: str) -> float | None:
    """The float of a text already matched as one; None where Go's ParseFloat overflows."""
    value = float(text)
    return value if math.isfinite(value) else None


def resolve_plain(text: str) -> tuple[str, Any]:
    """(tag, value) of a plain scalar, as yaml.v2's `resolve("", text)`."""
    if text[:1] and text[0] not in _HINTED:
        return STR_TAG, text
    if text in _WORDS:
        return _WORDS[text]
    if text[0] == ".":
        if _DOT_FLOAT.fullmatch(text) and (value := _finite(text.replace("_", ""))) is not None:
            return FLOAT_TAG, value
        return STR_TAG, text
    if text[0] not in _NUMBER_START:
        return STR_TAG, text  # a `y`, `n`, `t`, `f`, `o` or `~` word it is not
    plain = text.replace("_", "")
    if (number := _parse_int(plain)) is not None or (number := _parse_uint(plain)) is not None:
        return INT_TAG, number
    if _YAML_STYLE_FLOAT.fullmatch(plain) and (value := _finite(plain)) is not None:
        return FLOAT_TAG, value
    # Go's ParseInt(…, 0, …) reads `0b101` already; what is left for
    # resolve.go's own `0b` branch is a sign after the prefix (`0b-101`).
    # Its `-0b` branch reads nothing ParseInt(…, 0, …) did not.
    if plain.startswith("0b"):
        if (number := _parse_int(plain[2:], 2)) is not None:
            return INT_TAG, number
        if (number := _parse_uint(plain[2:], 2)) is not None:
            return INT_TAG, number
    return STR_TAG, text


def go_value(tag: str, text: str) -> Any:
    """The value of a scalar of tag `tag` (plain: its resolved one); raises `Undecodable`.

    An explicit `!!int`, `!!float`, `!!bool` or `!!null` must be what the
    text resolves to, as Go requires; an integer of the int64 range may be
    a `!!float`.
    """
    resolved, value = resolve_plain(text)
    if resolved == tag:
        return value
    if tag == FLOAT_TAG and resolved == INT_TAG and -_INT64 <= value < _INT64:
        return float(value)
    raise Undecodable(f"Cortex's loader reads it as {short_tag(resolved)}")


def int_field_value(value: float) -> int | None:
    """A float as an integer field of Cortex holds it; None where we refuse it.

    yaml.v2 stores a float into an int field truncated (`int64(f)`): a
    whole number (`1e3`, `1.`, `08`) is that number. A fraction is left a
    float, for the validator to refuse: Go would drop the fraction silently
    (0.5 queriers becomes 0, no limit at all, where the later Cortex, whose
    `max_queriers_per_tenant` is a float, reads half of them). Past the
    int64 range (and at 2**63) Go's conversion gives whatever the CPU
    gives, so those are refused too.
    """
    if not math.isfinite(value) or not value.is_integer() or not -_INT64 <= value < _INT64:
        return None
    return int(value)
