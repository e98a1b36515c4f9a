"""`manage.py loadtest`'s summary arithmetic (the phases themselves run in the benchmark)."""

from __future__ import annotations

from loadgen.management.commands.loadtest import GOAL_RATIO, _budget_line


def test_the_budget_line_says_what_the_goal_ratio_allows_and_what_the_scheduler_took() -> None:
    assert GOAL_RATIO == 0.8
    assert _budget_line(100.0, 175.0) == (
        "issue 17's 0.8 allows the scheduler 125 us of server CPU per request "
        "(25 us above the relay); it took 175 us (75 us above)"
    )
