"""Reading an actor path from a request's headers (Loki's `X-Loki-Actor-Path`).

`users|joe` is the path ("users", "joe"): `|` separates levels, as in Loki.
Segments are stripped and empty ones dropped (`a||b` is ("a", "b")), and the
path is bounded before it reaches the queue (at most `MAX_ACTOR_SEGMENTS`
segments of at most `MAX_SEGMENT_LENGTH` characters), so a hostile header
costs nothing; the queue then cuts it to `max_queue_hierarchy_levels`.
Header names compare case-insensitively, as HTTP's do.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "DEFAULT_ACTOR_PATH_HEADER",
    "HEADER_NAME",
    "MAX_ACTOR_SEGMENTS",
    "MAX_HIERARCHY_LEVELS",
    "MAX_SEGMENT_LENGTH",
    "actor_path_from_headers",
    "actor_path_from_pairs",
    "parse_actor_path",
    "placed_path",
]

DEFAULT_ACTOR_PATH_HEADER = "X-Loki-Actor-Path"
# The most `max_queue_hierarchy_levels` may be: deeper trees only cost.
MAX_HIERARCHY_LEVELS = 10
MAX_ACTOR_SEGMENTS = MAX_HIERARCHY_LEVELS
MAX_SEGMENT_LENGTH = 200
# An HTTP header name (RFC 9110 token).
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")


def parse_actor_path(value: str) -> tuple[str, ...]:
    """The path a header value names; () for none."""
    if not value:
        return ()
    parts = []
    for raw in value.split("|", MAX_ACTOR_SEGMENTS * 4):
        segment = raw.strip()
        if segment:
            parts.append(segment[:MAX_SEGMENT_LENGTH])
            if len(parts) == MAX_ACTOR_SEGMENTS:
                break
    return tuple(parts)


def actor_path_from_headers(headers: Mapping[str, str], header: str) -> tuple[str, ...]:
    """The path in a header mapping (any spelling of the header's name)."""
    value = headers.get(header)
    if value is None:
        wanted = header.lower()
        value = next((v for k, v in headers.items() if k.lower() == wanted), "")
    return parse_actor_path(value) if isinstance(value, str) else ()


def actor_path_from_pairs(
    headers: Iterable[tuple[str, Sequence[str]]], header: str
) -> tuple[str, ...]:
    """The path in (name, values) pairs, e.g. a forwarded httpgrpc request's headers."""
    wanted = header.lower()
    for name, values in headers:
        if name.lower() == wanted and values:
            return parse_actor_path(values[0])
    return ()


def placed_path(path: tuple[str, ...], levels: int) -> tuple[str, ...]:
    """Where the queue puts a request: its first `levels` levels (deeper ones ignored)."""
    return path[: max(levels, 0)]
