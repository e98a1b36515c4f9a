"""Formatting filters of the server-rendered pages."""

from __future__ import annotations

from dashboard.templatetags.dashboard_tags import config_value


def test_revision_values_are_spelled_as_config_not_as_python() -> None:
    block = {"enabled": True, "priorities": [{"priority": 3, "regex": None}]}
    assert config_value(block) == (
        '{"enabled": true, "priorities": [{"priority": 3, "regex": null}]}'
    )
    assert config_value(False) == "false"
    assert config_value("2h") == "2h"
    assert config_value(None) == "—"
