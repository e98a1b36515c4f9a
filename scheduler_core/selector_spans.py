"""What each selector of a PromQL query reads, relative to its evaluation range.

The AST walk behind `classify.select_range`: Prometheus'
`getTimeRangesForSelector` for every selector, with the enclosing
subqueries' ranges and offsets and any `@` anchor, kept relative to the
request's start and end so one parse serves every time range the same text
is asked for. Every number is integer milliseconds, as in Prometheus.
Caching the parse is the caller's business (`classify` keeps one per text).

The parser (a Rust extension) recurses once per level of nesting and per
operator of a chain, and its time grows with the square of that depth:
`up+up+...` of 12 KB took 6 s on the loop, and of 24 KB overflowed the
native stack and killed the process (a segfault Python cannot catch). So a
query whose nesting could exceed `MAX_QUERY_NESTING` is not parsed: it is
unclassifiable, as a query that does not parse is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import promql_parser
import re2

__all__ = ["MAX_QUERY_NESTING", "Span", "Unclassifiable", "ms", "nesting_bound", "parse_spans"]

# Past this a parse costs ~13 ms (a 256-operator chain); at a few thousand
# it takes seconds, then crashes. Real queries nest a few levels.
MAX_QUERY_NESTING = 256
# String literals first (a "(" or "+" in a label value nests nothing), then
# label matchers (a flat list, however long: linear to parse). Each pattern
# runs in linear time in Python's `re` (no nested choice can backtrack).
_STRINGS = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|\'[^\'\\\n]*(?:\\.[^\'\\\n]*)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_KEYWORDS = re.compile(r"\b(?:and|or|unless|atan2)\b")
_NOT_BRACKETS = re.compile(r"[^()\[\]]+")
_STEP = {"(": 1, "[": 1, ")": -1, "]": -1}

_NEGATIVE_AT = re2.compile(r"@\s*-")
# Go's int64 milliseconds span about 292 million years either side of 1970.
_MAX_SECONDS = 9.2e15


@dataclass(frozen=True, slots=True)
class _Subquery:
    """One enclosing subquery: its range and offset (ms), its `@` anchor if any."""

    range: int
    offset: int
    anchor: tuple[str, int] | None


@dataclass(frozen=True, slots=True)
class Span:
    """What one selector reads, relative to the request's evaluation range.

    `anchor` is "eval" (the request's start..end), "start" or "end" (an `@
    start()`/`@ end()` pins both sides there) or "abs" (an `@` at `at`;
    `at` is 0 for the other anchors).
    Keeping spans relative lets one parse serve every time range the same
    query text is asked for, which is how dashboards ask. Every number is
    integer milliseconds.
    """

    anchor: str
    at: int
    before_start: int
    before_end: int
    lookback: bool


class Unclassifiable(Exception):
    """The AST holds a value this module cannot turn into a time."""


def ms(seconds: float) -> int:
    """Integer milliseconds, as Prometheus times and durations are.

    A time beyond what Prometheus can represent (or not finite) makes the
    request's range unknown rather than raising.
    """
    if not math.isfinite(seconds) or abs(seconds) > _MAX_SECONDS:
        raise Unclassifiable(f"time out of range: {seconds!r}")
    return round(seconds * 1000.0)


def nesting_bound(query: str) -> int:
    """At least how deep the parser would recurse for `query` (0 past a quick look).

    The deepest bracket nesting plus every operator outside strings and
    label matchers: a chain of N binary (or unary) operators nests N deep.
    A query no longer than `MAX_QUERY_NESTING` cannot exceed it, so most are
    not scanned; every step of the scan is a C loop (a 1 MB query: ~50 ms).
    """
    if len(query) <= MAX_QUERY_NESTING:
        return 0
    text = _MATCHERS.sub("{}", _STRINGS.sub('""', query)).lower()
    operators = sum(map(text.count, "+-*/%^<>")) + text.count("==") + text.count("!=")
    operators += len(_KEYWORDS.findall(text))
    brackets = _NOT_BRACKETS.sub("", text)
    return operators + max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def parse_spans(query: str) -> tuple[Span, ...] | None:
    """The relative spans of every selector in `query`; None if unparseable."""
    if nesting_bound(query) > MAX_QUERY_NESTING:
        return None
    negative_at = _NEGATIVE_AT.search(query) is not None
    try:
        expr = _guarded(promql_parser.parse, query)
        # Reading the AST can fail too: `x[100000000y]` parses, but its
        # range does not fit the extension's timedelta and raises on access.
        spans: tuple[Span, ...] = _guarded(
            lambda _: tuple(_selector_spans(expr, (), 0, negative_at)), ""
        )
        return spans
    except Unclassifiable:
        return None


def _guarded(call: Callable[[str], Any], arg: str) -> Any:
    """Run a promql-parser call, turning any failure into `Unclassifiable`.

    The Rust extension signals some bad input by panicking, which reaches
    Python as a BaseException rather than an Exception.
    """
    try:
        return call(arg)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        raise Unclassifiable(str(exc)) from None


def _selector_spans(
    node: Any, subqueries: tuple[_Subquery, ...], eval_range: int, negative_at: bool
) -> Iterator[Span]:
    """Depth-first over the AST, carrying the enclosing subqueries from the root."""
    if isinstance(node, promql_parser.VectorSelector):
        yield _span(node, subqueries, eval_range, negative_at)
    elif isinstance(node, promql_parser.MatrixSelector):
        yield from _selector_spans(
            node.vector_selector, subqueries, _millis(node.range), negative_at
        )
    elif isinstance(node, promql_parser.SubqueryExpr):
        sub = _Subquery(_millis(node.range), _millis(node.offset), _anchor(node.at, negative_at))
        yield from _selector_spans(node.expr, (*subqueries, sub), 0, negative_at)
    else:
        for child in _children(node):
            yield from _selector_spans(child, subqueries, 0, negative_at)


def _children(node: Any) -> list[Any]:
    if isinstance(node, promql_parser.BinaryExpr):
        return [node.lhs, node.rhs]
    if isinstance(node, promql_parser.ParenExpr | promql_parser.UnaryExpr):
        return [node.expr]
    if isinstance(node, promql_parser.AggregateExpr):
        return [node.expr] if node.param is None else [node.param, node.expr]
    if isinstance(node, promql_parser.Call):
        return list(node.args)
    return []


def _span(node: Any, subqueries: tuple[_Subquery, ...], eval_range: int, negative_at: bool) -> Span:
    """Prometheus' `getTimeRangesForSelector` for one selector, kept relative."""
    sub_offset = sub_range = 0
    anchor: tuple[str, int] = ("eval", 0)
    for sub in subqueries:
        if sub.anchor is not None:
            # An `@` on a subquery makes everything inside it absolute, so
            # what the enclosing subqueries added no longer applies.
            sub_offset, sub_range, anchor = sub.offset, sub.range, sub.anchor
        else:
            sub_offset += sub.offset
            sub_range += sub.range
    own = _anchor(node.at, negative_at)
    if own is not None:
        anchor, before_start, before_end = own, 0, 0
    else:
        before_start, before_end = sub_offset + sub_range, sub_offset
    offset = _millis(node.offset)
    return Span(
        anchor=anchor[0],
        at=anchor[1],
        before_start=before_start + eval_range + offset,
        before_end=before_end + offset,
        lookback=not eval_range,
    )


def _millis(delta: Any) -> int:
    return 0 if delta is None else ms(float(delta.total_seconds()))


def _anchor(modifier: Any, negative_at: bool) -> tuple[str, int] | None:
    """Where an `@` modifier pins evaluation; `start()`/`end()` stay relative."""
    if modifier is None:
        return None
    kind = modifier.type
    if kind == promql_parser.AtModifierType.Start:
        return ("start", 0)
    if kind == promql_parser.AtModifierType.End:
        return ("end", 0)
    # promql-parser prints a negative `@` as 0 and panics (noisily, on
    # stderr) when asked for it, so a possible negative `@` is refused first.
    if negative_at and str(modifier) == "@ 0.000":
        raise Unclassifiable("@ before 1970")
    pinned = _guarded(lambda _: modifier.at, "")
    if pinned is None:
        raise Unclassifiable("@ modifier without a time")
    return ("abs", ms(float(pinned.timestamp())))
