"""A line diff of two YAML texts as rows a template can draw: unified or side by side.

Pure and Django-free. Rows carry their line numbers on each side and, for
a changed line, which characters changed, so the page can mark added,
removed and changed lines and the changed part of each. Long unchanged
runs fold (a `<details>` in the page): only `context` lines on each side of
a change stay open, the rest are one row saying how many lines it hides.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from itertools import zip_longest

__all__ = ["MODES", "Block", "Row", "Segment", "line_diff"]

UNIFIED, SPLIT = "unified", "split"
MODES = (UNIFIED, SPLIT)
CONTEXT = 3
# Past this many shown rows a diff is cut (an import of thousands of tenants).
MAX_ROWS = 1500


@dataclass(frozen=True, slots=True)
class Segment:
    text: str
    changed: bool = False


@dataclass(frozen=True, slots=True)
class Row:
    """One line (unified) or one pair of lines (split).

    `kind`: "same", "removed", "added" or "changed" (a removed line paired
    with its replacement; split rows only). Unified rows use `old`/`new`
    for the numbers and `left` for the text.
    """

    kind: str
    old: int | None
    new: int | None
    left: tuple[Segment, ...] = ()
    right: tuple[Segment, ...] = ()

    @property
    def sign(self) -> str:
        return {"same": " ", "removed": "-", "added": "+"}.get(self.kind, "~")


@dataclass(slots=True)
class Block:
    """Rows shown as they are, or a fold of unchanged rows."""

    rows: list[Row] = field(default_factory=list)
    fold: bool = False

    @property
    def count(self) -> int:
        return len(self.rows)


@dataclass(slots=True)
class LineDiff:
    mode: str
    blocks: list[Block]
    added: int
    removed: int
    cut: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


def _plain(text: str) -> tuple[Segment, ...]:
    return (Segment(text),)


def _marked(old: str, new: str) -> tuple[tuple[Segment, ...], tuple[Segment, ...]]:
    """The two lines with what differs between their common start and end marked.

    One run per line, not a character-level diff: "^never$" -> "special"
    reads as one value replaced, not as letters shuffled.
    """
    limit = min(len(old), len(new))
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1

    def cut(text: str) -> tuple[Segment, ...]:
        parts = (
            Segment(text[:head]),
            Segment(text[head : len(text) - tail], True),
            Segment(text[len(text) - tail :]),
        )
        return tuple(part for part in parts if part.text)

    return cut(old), cut(new)


def _rows(before: list[str], after: list[str], mode: str) -> list[Row]:
    rows: list[Row] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                text = _plain(before[i1 + k])
                rows.append(Row("same", i1 + k + 1, j1 + k + 1, text, text))
            continue
        old = list(range(i1, i2))
        new = list(range(j1, j2))
        if mode == SPLIT:
            for a, b in zip_longest(old, new):
                if a is not None and b is not None:
                    left, right = _marked(before[a], after[b])
                    rows.append(Row("changed", a + 1, b + 1, left, right))
                elif a is not None:
                    rows.append(Row("removed", a + 1, None, _plain(before[a])))
                else:
                    rows.append(Row("added", None, b + 1, (), _plain(after[b])))
            continue
        pairs = dict(zip(old, new, strict=False))
        marks = {a: _marked(before[a], after[b]) for a, b in pairs.items()}
        inverse = {b: a for a, b in pairs.items()}
        for a in old:
            left = marks[a][0] if a in marks else _plain(before[a])
            rows.append(Row("removed", a + 1, None, left))
        for b in new:
            right = marks[inverse[b]][1] if b in inverse else _plain(after[b])
            rows.append(Row("added", None, b + 1, right))
    return rows


def _fold(rows: list[Row], context: int) -> list[Block]:
    blocks: list[Block] = []
    run: list[Row] = []

    def flush(last: bool) -> None:
        first = not blocks
        keep_head = 0 if first else context
        keep_tail = 0 if last else context
        if len(run) > keep_head + keep_tail + 1:
            head, tail = run[:keep_head], run[len(run) - keep_tail :]
            hidden = run[keep_head : len(run) - keep_tail]
            if head:
                blocks.append(Block(head))
            blocks.append(Block(hidden, fold=True))
            if tail:
                blocks.append(Block(tail))
        elif run:
            blocks.append(Block(list(run)))
        run.clear()

    for row in rows:
        if row.kind == "same":
            run.append(row)
            continue
        flush(last=False)
        if blocks and not blocks[-1].fold:
            blocks[-1].rows.append(row)
        else:
            blocks.append(Block([row]))
    flush(last=True)
    return blocks


def line_diff(before: str, after: str, mode: str = UNIFIED, context: int = CONTEXT) -> LineDiff:
    """The rows of the diff from `before` to `after`, unchanged runs folded."""
    mode = mode if mode in MODES else UNIFIED
    old, new = before.splitlines(), after.splitlines()
    rows = _rows(old, new, mode)
    added = sum(r.kind in ("added", "changed") for r in rows)
    removed = sum(r.kind in ("removed", "changed") for r in rows)
    cut = max(0, len(rows) - MAX_ROWS)
    if not added and not removed:
        blocks = [Block(rows, fold=True)] if rows else []
    else:
        blocks = _fold(rows[:MAX_ROWS], context)
    return LineDiff(mode, blocks, added, removed, cut)
