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
"""

from __future__ import annotations

import json
from json import encoder, scanner
from typing import Any

__all__ = ["compact_dumps", "loads"]


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
# The C scanner clears its memo after every call, so one can serve all.
_SCAN = scanner.c_make_scanner(json.JSONDecoder())


def compact_dumps(value: Any) -> str:
    """Compact JSON (no spaces), refusing NaN and infinities with ValueError."""
    return "".join(_C_ENCODER(value, 0))


def loads(text: str) -> Any:
    """`json.loads(text)`: a document that fills the whole text is scanned at once."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        return json.loads(text)  # no value at 0 (whitespace, BOM, empty): its error, or its parse
    if end != len(text):
        return json.loads(text)  # trailing whitespace, or extra data (its error)
    return value
