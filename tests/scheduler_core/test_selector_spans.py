"""The parse guard: a query that would nest too deep is unclassifiable, never parsed.

promql-parser recurses per level of nesting and per operator of a chain:
past a few thousand it overflowed the native stack and killed the process,
and well before that it held the loop for seconds.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from scheduler_core.selector_spans import MAX_QUERY_NESTING, nesting_bound, parse_spans

CHAIN = "up" + "+up" * 8000  # 24 KB: a segfault when parsed


def test_a_24_kb_operator_chain_is_unclassifiable_and_the_process_lives() -> None:
    # In a process of its own: on the unguarded parser this one dies of SIGSEGV.
    code = f"from scheduler_core.selector_spans import parse_spans; print(parse_spans({CHAIN!r}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "None"), done.stderr[-500:]


@pytest.mark.parametrize(
    "query",
    [
        "(" * 300 + "up" + ")" * 300,
        "-" * 300 + "up",
        " or ".join(["up"] * 300),
        "abs(" * 200 + "up" + ")" * 200 + " + up" * 100,
    ],
)
def test_nesting_past_the_limit_is_not_parsed(query: str) -> None:
    assert nesting_bound(query) > MAX_QUERY_NESTING
    assert parse_spans(query) is None


@pytest.mark.parametrize(
    "query",
    [
        "up{" + ",".join(f'a{i}="x+(y"' for i in range(3000)) + "}",  # many matchers
        'up{job=~"' + "a|" * 20000 + 'b"}',  # a long regex
        'label_replace(up, "a", "' + "(+" * 2000 + '", "b", "c")',  # operators in a string
        " or ".join(f"sum(rate(m{i}[5m]))" for i in range(60)),
        "(" * 100 + "up" + ")" * 100 + " + up" * 100,
        'rate(errors_or_total{job="' + "x" * 300 + '"}[5m])',  # "or" inside a name
    ],
)
def test_long_but_shallow_queries_are_still_parsed(query: str) -> None:
    assert nesting_bound(query) <= MAX_QUERY_NESTING
    assert parse_spans(query) is not None


def test_the_bound_counts_the_deepest_brackets_plus_every_operator() -> None:
    query = "sum(rate(x[5m])) / sum(rate(y[5m])) * 100 - 1 > bool 0" + " " * 300
    # Brackets nest 3 deep (sum, rate, [5m]); operators: / * - >.
    assert nesting_bound(query) == 3 + 4
