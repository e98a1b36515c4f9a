"""The explain box names what stops it: each unreadable time box, each error in the rules."""

from __future__ import annotations

from typing import Any

import pytest

from dashboard.explain_box import EXPLAIN_DEFAULTS, EXPLAIN_FIELDS, rules_problem, run_explain
from scheduler_core.errors import FieldError

RULES: dict[str, Any] = {
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        "priorities": [{"priority": 5, "query_attributes": [{"regex": "up"}]}],
    }
}


def _inputs(**typed: str) -> dict[str, str]:
    return {**{k: EXPLAIN_DEFAULTS.get(k, "") for k in EXPLAIN_FIELDS}, "query": "up", **typed}


def test_every_unreadable_time_box_is_named_not_only_the_first() -> None:
    problem = run_explain("acme", RULES, _inputs(start="-1h", step="abc"))["problem"]
    assert problem.startswith("Start (ago): ")
    assert "; Step: " in problem and '"abc"' in problem


def test_an_error_in_the_rules_is_named_by_its_field() -> None:
    draft = {"query_priority": {**RULES["query_priority"], "default_priority": "x"}}
    draft["query_priority"]["priorities"] = [{"priority": "high", "query_attributes": [{}]}]
    problem = run_explain("acme", draft, _inputs())["problem"]
    assert problem.startswith("Fix the rules first: ")
    assert "rule 1 › priority: must be an integer" in problem
    assert "default_priority" in problem


def test_past_three_errors_the_rest_are_counted() -> None:
    errors = [FieldError(f"query_priority.priorities[{i}].priority", "bad") for i in range(5)]
    assert rules_problem(errors) == (
        "Fix the rules first: rule 1 › priority: bad; rule 2 › priority: bad; "
        "rule 3 › priority: bad; and 2 more."
    )


def test_an_error_about_the_whole_block_says_so() -> None:
    assert rules_problem([FieldError("", "must be a mapping")]) == (
        "Fix the rules first: (whole block): must be a mapping."
    )


WINDOWED: dict[str, Any] = {
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        # Matches only a query reading the last 10 minutes.
        "priorities": [
            {"priority": 5, "query_attributes": [{"time_window": {"start": "10m", "end": "0s"}}]}
        ],
    }
}


@pytest.mark.django_db
def test_an_instant_query_is_evaluated_at_end_as_grafana_sends_it() -> None:
    # The box's defaults: Start 1h ago, End now. Grafana's `time` is the end.
    found = run_explain("acme", WINDOWED, _inputs(api_type="query"))
    assert (found["priority"], found["source"]) == (5, "rule")
    assert found["select"] == ("5m", "0s")


@pytest.mark.django_db
def test_an_instant_query_with_end_left_blank_is_evaluated_at_start() -> None:
    found = run_explain("acme", WINDOWED, _inputs(api_type="query", end=""))
    assert found["source"] == "default"
    assert found["select"] == ("1h5m", "1h")


@pytest.mark.django_db
def test_an_instant_query_ignores_a_step_it_would_not_send() -> None:
    found = run_explain("acme", WINDOWED, _inputs(api_type="query", step="0s"))
    assert found["source"] == "rule"
