"""The websocket protocols' JSON, through the standard library's C codec directly.

Every frame of a request goes through `json.loads` or `json.dumps`, and
each of those calls passes two or three Python-level layers before it
reaches the C code: `loads` -> `decode` -> `raw_decode` plus a whitespace
match on each side, and `encode` -> `iterencode`, which builds a new C
encoder for every call. Here both C objects are built once and called
directly, about a microsecond less per frame each way.

The results are exactly the standard library's: `compact_dumps(o)` equals
`json.dumps(o, separators=(",", ":"), allow_nan=False,
check_circular=False)`, and `loads(text)` equals `json.loads(text)` for a
`str`, errors included (anything the fast path does not accept outright,
such as surrounding whitespace, goes through `json.loads` itself). Both
are checked against the standard library by property tests.

`loads(text, unique_keys=True)` is `json.loads(text, object_pairs_hook=...)`
with a hook that refuses a name given twice in one object (`DuplicateJsonKey`):
`json` keeps the last of two equal names, so `{"tenant": "a", ...,
"tenant": "b"}` would quietly mean only its last half, and a filter that
read the first would be fooled. It costs under a microsecond per frame.
"""

from __future__ import annotations

import json
from json import encoder, scanner
from typing import Any

from scheduler_core.bounds import quoted

__all__ = ["DuplicateJsonKey", "compact_dumps", "loads", "unique_object"]


def _refuse(value: Any) -> Any:
    # What JSONEncoder.default says for a value JSON has no form for.
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# CPython always builds `_json`, the C half of the json module, so both
# objects exist. No circular-reference markers: every message is a tree,
# built by us or parsed from JSON, and a shared markers dict would keep
# entries after an error mid-encode and refuse every later message.
_C_ENCODER = encoder.c_make_encoder(
    None, _refuse, encoder.encode_basestring_ascii, None, ":", ",", False, False, False
)


class DuplicateJsonKey(ValueError):
    """An object gives the same name twice."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {quoted(key)} in one object")
        self.key = key


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's dict; raises `DuplicateJsonKey` for a name given twice."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateJsonKey(key)
            seen.add(key)
    return value


# The C scanner clears its memo after every call, so one can serve all.
_SCAN = scanner.c_make_scanner(json.JSONDecoder())
_SCAN_UNIQUE = scanner.c_make_scanner(json.JSONDecoder(object_pairs_hook=unique_object))


def compact_dumps(value: Any) -> str:
    """Compact JSON (no spaces), refusing NaN and infinities with ValueError."""
    return "".join(_C_ENCODER(value, 0))


def loads(text: str, *, unique_keys: bool = False) -> Any:
    """`json.loads(text)`: a document that fills the whole text is scanned at once."""
    try:
        value, end = (_SCAN_UNIQUE if unique_keys else _SCAN)(text, 0)
    except StopIteration:
        end = -1  # no value at 0 (whitespace, BOM, empty): json.loads' error, or its parse
    if end == len(text):
        return value
    # Trailing whitespace or extra data too: what json.loads makes of it.
    return json.loads(text, object_pairs_hook=unique_object if unique_keys else None)
