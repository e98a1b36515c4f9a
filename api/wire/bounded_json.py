"""JSON decoding with a nesting limit, in time linear in the text.

Python's `json` recurses once per nesting level, so about a thousand
levels (a 2 kB text) raise `RecursionError` (not a `ValueError`), and a
value just under that still breaks whatever walks it next (rendering,
validation, copying). Every JSON text a client sends (websocket frames, REST
bodies, inspector frames) is decoded here and refused past `MAX_JSON_DEPTH`
levels, with a `JsonTooDeep` that names the limit.

The depth is measured before parsing: strings are cut out first (their
brackets do not nest), then the running depth over the brackets left is
computed in C (`accumulate`), so hostile input costs a few C-speed passes.
A text with fewer brackets than the limit cannot be too deep, so the
common small message is checked with two `str.count` calls only.
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Any

from api.wire import json_codec
from scheduler_core.bounds import MAX_DOCUMENT_DEPTH

__all__ = ["MAX_JSON_DEPTH", "JsonTooDeep", "json_depth", "loads_bounded"]

# Far deeper than any message of the protocols or any tenant block (9 levels).
MAX_JSON_DEPTH = MAX_DOCUMENT_DEPTH

# A JSON string: a quote, runs of plain characters or escapes, then a quote
# or the end of the text (a string left open runs to the end, as a parser
# would fail there). Possessive, so no input can make the engine backtrack:
# every character is looked at once.
_STRING = re.compile(r'"(?:[^"\\]++|\\.?)*+(?:"|\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class JsonTooDeep(ValueError):
    """The text nests arrays/objects deeper than the limit."""

    def __init__(self, depth: int, limit: int) -> None:
        super().__init__(f"JSON nested {depth} levels deep; the limit is {limit}")
        self.depth = depth
        self.limit = limit


def json_depth(text: str) -> int:
    """How deep arrays and objects nest in `text` (brackets in strings do not count).

    Exact for valid JSON; for invalid JSON it is at least the depth a parser
    reaches before it finds the error, so a check before parsing is safe.
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if not brackets:
        return 0
    return max(0, max(accumulate(map(_STEP.__getitem__, brackets))))


def loads_bounded(
    text: str | bytes,
    limit: int = MAX_JSON_DEPTH,
    *,
    unique_keys: bool = False,
) -> Any:
    """`json.loads`, refusing (`JsonTooDeep`) text nested deeper than `limit`.

    Raises `ValueError` (its subclasses `json.JSONDecodeError`, `JsonTooDeep`,
    `DuplicateJsonKey` with `unique_keys`, and `UnicodeDecodeError`) for
    anything that is not acceptable JSON.
    """
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8")
    if text.count("[") + text.count("{") > limit:
        depth = json_depth(text)
        if depth > limit:
            raise JsonTooDeep(depth, limit)
    try:
        return json_codec.loads(text, unique_keys=unique_keys)
    except RecursionError as exc:  # cannot happen after the check; never a crash
        raise JsonTooDeep(limit + 1, limit) from exc
