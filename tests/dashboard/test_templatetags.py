"""Formatting filters of the server-rendered pages."""

from __future__ import annotations

import json

import pytest

from dashboard.templatetags.dashboard_tags import config_value, field_label


def test_revision_values_are_spelled_as_config_not_as_python() -> None:
    block = {"enabled": True, "priorities": [{"priority": 3, "regex": None}]}
    assert config_value(block) == (
        '{"enabled": true, "priorities": [{"priority": 3, "regex": null}]}'
    )
    assert config_value(False) == "false"
    assert config_value("2h") == "2h"
    assert config_value(None) == "—"
    assert config_value(0.5) == "0.5"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("rate\\(ñ.*€\\)", "rate\\(ñ.*€\\)"),  # as typed, not \\u00f1
        (" sum ", '" sum "'),  # its spaces visible
        ("", '""'),
        ("5", '"5"'),  # text, not the number 5
        ("true", '"true"'),
        ("—", '"—"'),  # text, not "absent"
    ],
)
def test_text_is_shown_bare_unless_it_would_read_as_something_else(text: str, shown: str) -> None:
    assert config_value(text) == shown
    assert config_value({"regex": text}) == f'{{"regex": {json.dumps(text, ensure_ascii=False)}}}'


@pytest.mark.parametrize(
    ("path", "label"),
    [
        ("query_priority.priorities[0].query_attributes[1].regex", "rule 1 › attribute 2 › regex"),
        ("query_priority.priorities[11]", "rule 12"),
        (
            "query_rejection.query_attributes[0].time_window.start",
            "query_rejection › attribute 1 › time_window.start",
        ),
        ("query_priority.default_priority", "query_priority.default_priority"),
        (
            "tenants.team.a.query_priority.priorities[2].priority",
            "tenants.team.a › rule 3 › priority",
        ),
    ],
)
def test_a_config_path_is_labelled_as_the_editor_numbers_rules_and_attributes(
    path: str, label: str
) -> None:
    assert field_label(path) == label
