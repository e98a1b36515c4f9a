"""dashboard.line_diff: rows of a YAML line diff, unified or side by side, folded."""

from __future__ import annotations

from dashboard import line_diff as ld


def _text(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


BEFORE = [f"line {i}" for i in range(1, 31)]
AFTER = [*BEFORE[:14], "line 15 changed", *BEFORE[15:], "line 31"]


def test_unified_rows_number_both_sides_and_mark_the_changed_characters():
    diff = ld.line_diff(_text(BEFORE), _text(AFTER), "unified")
    rows = [row for block in diff.blocks if not block.fold for row in block.rows]
    removed = next(r for r in rows if r.kind == "removed")
    added = next(r for r in rows if r.kind == "added")
    assert (removed.old, removed.new, added.old, added.new) == (15, None, None, 15)
    assert [s.text for s in added.left if s.changed] == [" changed"]
    assert (diff.added, diff.removed) == (2, 1)


def test_long_unchanged_runs_fold_keeping_three_lines_around_each_change():
    diff = ld.line_diff(_text(BEFORE), _text(AFTER), "unified")
    folds = [block for block in diff.blocks if block.fold]
    shown = [row.old for block in diff.blocks if not block.fold for row in block.rows]
    assert [f.count for f in folds] == [11, 9]  # lines 1-11, then 19-27
    assert shown[:4] == [12, 13, 14, 15]
    assert sum(block.count for block in diff.blocks) == 32


def test_side_by_side_pairs_a_replaced_line_and_leaves_added_ones_alone():
    diff = ld.line_diff(_text(BEFORE), _text(AFTER), "split")
    rows = [row for block in diff.blocks for row in block.rows]
    changed = [r for r in rows if r.kind == "changed"]
    assert [(r.old, r.new) for r in changed] == [(15, 15)]
    assert [(r.old, r.new) for r in rows if r.kind == "added"] == [(None, 31)]


def test_equal_texts_have_no_changes_and_everything_folds():
    diff = ld.line_diff(_text(BEFORE), _text(BEFORE))
    assert not diff.changed and [b.fold for b in diff.blocks] == [True]


def test_an_enormous_diff_is_cut_and_says_how_much_is_left_out():
    many = [f"k{i}: {i}" for i in range(ld.MAX_ROWS + 500)]
    diff = ld.line_diff("", _text(many))
    assert diff.cut == 500
    assert sum(block.count for block in diff.blocks) == ld.MAX_ROWS
