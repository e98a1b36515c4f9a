"""Formatting filters of the server-rendered pages."""

from __future__ import annotations

import json

import pytest
from django.template.loader import render_to_string

from dashboard.templatetags.dashboard_tags import (
    config_value,
    field_label,
    format_wait,
    node_label,
    shown,
)
from scheduler_core.durations import parse_duration


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


def test_a_hidden_character_in_a_clients_text_is_a_marked_escape_and_the_rest_is_escaped() -> None:
    assert shown("tenant-a") == "tenant-a"
    assert shown("<b>") == "&lt;b&gt;"
    marked = str(shown('<up{a="\u202egnp"}'))
    assert marked.startswith('&lt;up{a=&quot;<span class="hidden-char" title=')
    assert marked.endswith(">⟨U+202E⟩</span>gnp&quot;}")
    assert "\u202e" not in marked


def test_a_server_drawn_tree_row_writes_out_a_bidi_override_in_its_name_and_label() -> None:
    node = {"kind": "actor", "name": "team\u202ezyx", "length": 3, "count": 0}
    assert node_label(node) == "actor team⟨U+202E⟩zyx: 3 queued"
    html = render_to_string(
        "dashboard/_node.html",
        {"node": node | {"key": "k", "by_priority": [], "oldest_wait": 1.0}, "level": 1},
    )
    assert "\u202e" not in html
    assert '<span class="name" dir="auto">team<span class="hidden-char"' in html


@pytest.mark.parametrize(
    ("seconds", "spelled"),
    [
        (-0.04, "0s"),  # a moment off between clocks
        (0.3, "300ms"),
        (9.96, "10.0s"),  # tenths under 10 s, as it ticks
        (12.34, "12s"),
        (59.96, "1m"),
        (61.5, "1m2s"),
        (2 * 86400 + 609, "2d10m"),
        (7 * 86400, "1w"),  # as Prometheus prints it
        ("soon", "–"),
    ],
)
def test_a_wait_is_spelled_in_the_explain_box_s_units(seconds: float, spelled: str) -> None:
    assert format_wait(seconds) == spelled
    if spelled != "–" and float(seconds) >= 60:
        # From a minute up, a duration the explain box and the rules read back.
        assert parse_duration(spelled) == pytest.approx(float(seconds), abs=30)


def test_a_rows_label_names_its_priority_mix_as_its_row_shows_it() -> None:
    node = {"kind": "tenant", "name": "team-a", "length": 98, "by_priority": [(0, 90), (3, 8)]}
    assert node_label(node) == "team-a: 98 queued (p0 90 · p3 8)"
    assert node_label(node | {"length": 0, "by_priority": []}) == "team-a: 0 queued"
