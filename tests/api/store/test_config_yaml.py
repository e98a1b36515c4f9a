"""The YAML view of a tenant's block: the export's serialiser, read back with lines."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from api.store.config_yaml import (
    MAX_BLOCK_NODES,
    config_yaml,
    line_for,
    overrides_yaml,
    parse_tenant_block,
    settings_yaml,
    tenant_block_yaml,
    unified_yaml_diff,
)
from tests.config_samples import empty_variants, full_sample, leaves

SAMPLE = full_sample()
VARIANTS = empty_variants(SAMPLE)


def test_the_block_is_the_export_section_of_that_tenant_one_level_less_indented():
    export = overrides_yaml({"team-a": SAMPLE, "team-b": {}})
    block = tenant_block_yaml("team-a", SAMPLE)
    lines = export.splitlines()
    section = lines[1 : 1 + len(block.splitlines())]
    assert [line[2:] for line in section] == block.splitlines()


@pytest.mark.parametrize("tenant_id", ["team-a", "123", "a.b", "yes", None])
def test_every_validator_field_survives_the_yaml_round_trip(tenant_id):
    parsed = parse_tenant_block(tenant_block_yaml(tenant_id, SAMPLE))
    assert parsed.ok and parsed.ignored == []
    assert parsed.config == SAMPLE
    assert parsed.pasted_tenant == tenant_id


@pytest.mark.parametrize(("field", "config"), VARIANTS, ids=[name for name, _ in VARIANTS])
def test_null_and_empty_fields_survive_the_yaml_round_trip_as_they_were(field, config):
    parsed = parse_tenant_block(tenant_block_yaml("team-a", config))
    assert parsed.config == config, field
    assert parsed.ok


def test_the_samples_cover_nulls_and_empties_of_both_kinds():
    names = [name for name, _ in VARIANTS]
    assert any(name.endswith("=None") for name in names)
    assert any(name.endswith("=''") for name in names)
    assert any(name.endswith("=[]") for name in names)


def test_every_field_path_has_the_line_of_its_key():
    text = tenant_block_yaml("team-a", SAMPLE)
    parsed = parse_tenant_block(text)
    rows = text.splitlines()
    for path, value in leaves(SAMPLE):
        line = parsed.lines[path]
        key = path.rsplit(".", 1)[-1]
        assert rows[line - 1].lstrip("- ").startswith(f"{key}:"), (path, rows[line - 1])
        assert yaml.safe_load(rows[line - 1].lstrip("- "))[key] == value


def test_a_path_missing_from_the_text_takes_its_nearest_ancestors_line():
    text = "t:\n  query_priority:\n    priorities:\n    - query_attributes:\n      - regex: x\n"
    parsed = parse_tenant_block(text)
    assert line_for("query_priority.priorities[0].priority", parsed.lines) == 4
    assert line_for("query_priority.enabled", parsed.lines) == 2
    assert line_for("nothing.at.all", parsed.lines) == 2
    [error] = parsed.errors
    assert (error.path, error.line) == ("query_priority.priorities[0].priority", 4)


def test_a_pasted_cortex_block_reports_each_extra_limit_with_its_line_and_keeps_the_rest():
    pasted = (
        "ingestion_rate: 350000\n"
        "ingestion_burst_size: 3500000\n"
        "max_queriers_per_tenant: 4\n"
        "max_global_series_per_user: 0\n"
    )
    parsed = parse_tenant_block(pasted)
    assert parsed.pasted_tenant is None
    assert [(n.name, n.line) for n in parsed.ignored] == [
        ("ingestion_rate", 1),
        ("ingestion_burst_size", 2),
        ("max_global_series_per_user", 4),
    ]
    assert parsed.config == {"max_queriers_per_tenant": 4} and parsed.ok


def test_a_block_under_its_overrides_line_loads_with_lines_counted_from_the_top():
    text = 'overrides:\n  "42":\n    ingestion_rate: 1\n    max_queriers_per_tenant: x\n'
    parsed = parse_tenant_block(text)
    assert parsed.pasted_tenant == "42"
    assert [(n.name, n.line) for n in parsed.ignored] == [("ingestion_rate", 3)]
    assert [(e.path, e.line) for e in parsed.errors] == [("max_queriers_per_tenant", 4)]


def test_a_body_with_a_single_tenant_field_is_not_mistaken_for_a_key_line():
    parsed = parse_tenant_block("query_priority:\n  enabled: true\n")
    assert parsed.pasted_tenant is None
    assert parsed.config == {"query_priority": {"enabled": True}}


def test_an_overrides_section_of_several_tenants_is_refused_saying_why():
    parsed = parse_tenant_block("overrides:\n  a: {}\n  b: {}\n")
    assert parsed.config is None and parsed.syntax is not None
    assert "2 tenants" in parsed.syntax.message


def test_several_tenants_blocks_pasted_without_overrides_are_refused_saying_why():
    """Read as one block, each tenant was a limit "not used here": an empty draft."""
    parsed = parse_tenant_block("team-a:\n  max_queriers_per_tenant: 1\nteam-b: {}\n")
    assert parsed.config is None and parsed.syntax is not None
    assert "2 tenants' blocks (team-a, team-b)" in parsed.syntax.message


@pytest.mark.parametrize("key", ["query_priorty", "Query_Priority"])
def test_a_misspelt_field_alone_is_no_tenant_key_line(key):
    parsed = parse_tenant_block(f"{key}:\n  enabled: true\n")
    assert parsed.pasted_tenant is None
    assert [(e.path, e.message) for e in parsed.errors] == [
        (key, "unknown field; did you mean query_priority?")
    ]


def test_limits_holding_mappings_are_no_tenants_blocks():
    """Mimir limits whose values are mappings were refused as "2 tenants' blocks"."""
    text = (
        "active_series_custom_trackers:\n  svc: '{job=\"x\"}'\n"
        "alertmanager_notification_rate_limit_per_integration:\n  email: 1\n"
        "max_queriers_per_tenant: 2\n"
    )
    parsed = parse_tenant_block(text)
    assert parsed.syntax is None and parsed.config == {"max_queriers_per_tenant": 2}


@pytest.mark.parametrize(
    "text",
    [
        "team_x:\n  ingestion_rate: 10\nteam_y:\n  ingestion_rate: 20\n",
        "ingestion_rate: 10\nmax_query_length: 721h\n",
        "active_series_custom_trackers:\n  svc: '{job=\"x\"}'\nother_limit: {a: 1}\n",
    ],
)
def test_a_block_of_only_other_limits_is_refused_rather_than_clearing_the_tenant(text):
    """Saved, its empty draft would have wiped the tenant's limits and rules."""
    parsed = parse_tenant_block(text)
    assert parsed.config is None and parsed.syntax is not None
    assert "no limit this scheduler uses" in parsed.syntax.message


def test_an_empty_block_still_clears_a_tenant_on_purpose():
    assert parse_tenant_block("{}\n").config == {}


def test_a_misspelt_field_is_refused_at_its_line_naming_the_field_it_misspells():
    """Dropped as a Cortex limit, `query_priorty` made a draft without the tenant's rules."""
    parsed = parse_tenant_block("ingestion_rate: 5\nquery_priorty:\n  enabled: true\n")
    assert [n.name for n in parsed.ignored] == ["ingestion_rate"]
    assert [(e.path, e.message, e.line) for e in parsed.errors] == [
        ("query_priorty", "unknown field; did you mean query_priority?", 2)
    ]


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("max_queriers_per_tenant: 1\nquery_priority: [\n", 3, "YAML syntax"),
        ("- 1\n- 2\n", 1, "must be a mapping"),
        ("just words\n", 1, "must be a mapping"),
    ],
)
def test_text_that_is_no_tenant_block_says_where_and_why(text, line, words):
    parsed = parse_tenant_block(text)
    assert parsed.config is None and not parsed.ok
    assert parsed.syntax is not None and parsed.syntax.line == line
    assert words in parsed.syntax.message


def test_empty_text_is_an_empty_block_and_an_empty_key_line_too():
    assert parse_tenant_block("").config == {}
    both = parse_tenant_block("team-a:\n")
    assert (both.config, both.pasted_tenant) == ({}, "team-a")


def test_an_alias_bomb_and_a_nul_are_refused_before_anything_walks_them():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for level in "bcdefg":
        previous = chr(ord(level) - 1)
        bomb += f"{level}: &{level} [*{previous}, *{previous}, *{previous}, *{previous}, "
        bomb += f"*{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}]\n"
    parsed = parse_tenant_block(bomb)
    assert parsed.syntax is not None and str(MAX_BLOCK_NODES) in parsed.syntax.message
    assert "NUL" in parse_tenant_block("a: \x00\n").problems[0].message


def test_settings_yaml_fills_the_defaults_so_a_diff_shows_only_what_changed():
    before, after = settings_yaml({}), settings_yaml({"priority_aging": "10s"})
    diff = unified_yaml_diff(before, after, "a", "b")
    assert [line for line in diff.splitlines() if line[:1] in "+-"][2:] == [
        "-priority_aging: 0s",
        "+priority_aging: 10s",
    ]
    assert unified_yaml_diff(before, before, "a", "b") == ""


def test_the_whole_config_is_the_overrides_then_the_settings():
    text = config_yaml({"b": {}, "a": {"max_queriers_per_tenant": 1}}, {})
    loaded = yaml.safe_load(text)
    assert list(loaded) == ["overrides", "settings"]
    assert list(loaded["overrides"]) == ["a", "b"]
    assert loaded["settings"]["layout"] == "tenant-first"


def test_a_pasted_block_giving_a_key_twice_is_refused_with_its_path_and_line():
    text = "query_priority:\n  enabled: true\n  default_priority: 1\n  enabled: false\n"
    parsed = parse_tenant_block(text)
    assert parsed.config is None and parsed.syntax is not None
    assert parsed.syntax.path == "query_priority.enabled"
    assert parsed.syntax.line == 4
    assert "duplicate key" in parsed.syntax.message


def test_a_pasted_block_nested_too_deep_is_refused_before_its_lines_are_walked():
    parsed = parse_tenant_block("query_priority: " + "[" * 900 + "]" * 900 + "\n")
    assert parsed.config is None and parsed.syntax is not None
    assert "deeper than 100 levels" in parsed.syntax.message


def test_a_value_its_constructor_refuses_is_a_problem_not_an_exception():
    parsed = parse_tenant_block("max_queriers_per_tenant: !!timestamp 2024-13-45\n")
    assert parsed.syntax is not None and "cannot be read" in parsed.syntax.message


@pytest.mark.parametrize(
    "scalar", ["!!int ''", "!!bool ''", "!!timestamp x", "!!float ''", "!!int"]
)
def test_a_tagged_scalar_its_type_cannot_read_is_a_problem_at_its_line(scalar: str) -> None:
    parsed = parse_tenant_block(f"query_priority:\n  enabled: {scalar}\n")
    assert parsed.config is None and parsed.syntax is not None
    assert "cannot read" in parsed.syntax.message
    assert parsed.syntax.line == 2


_YAML_PIECES = (
    "\n", "  ", "- ", ": ", "? ", "&a ", "*a", "<<", "!!int ", "!!float ", "!!bool ", "!!str ",
    "!!timestamp ", "!!binary ", "!!set ", "!!omap ", "!foo ", "{", "}", "[", "]", ",", "'", '"',
    "|", ">", "#", "---", "...", "~", "true", "9" * 30, "1e400", "0x1f", "2024-13-45", "5m",
    "overrides", "t1", "query_priority", "enabled", "priorities", "query_attributes", "regex",
)  # fmt: skip


@settings(max_examples=400)
@given(st.lists(st.sampled_from(_YAML_PIECES) | st.text(max_size=3), max_size=30).map("".join))
def test_any_text_pasted_as_a_block_gives_an_answer_never_an_exception(text: str) -> None:
    parsed = parse_tenant_block(text)
    # A body to use, or a problem saying where; a syntax problem comes alone.
    assert (parsed.config is None) == (parsed.syntax is not None)
    assert parsed.syntax is None or not parsed.errors


def test_a_block_whose_database_reordered_its_keys_reads_in_field_order():
    """PostgreSQL's jsonb returns keys by length: `end` before `start`, the limits last."""
    as_jsonb_returns = {
        "query_priority": {
            "enabled": True,
            "priorities": [
                {
                    "priority": 2,
                    "query_attributes": [
                        {"regex": "x", "time_window": {"end": "0s", "start": "2h"}}
                    ],
                    "reserved_queriers": 1,
                }
            ],
            "default_priority": 0,
        },
        "max_queriers_per_tenant": 3,
    }
    keys = [
        line.strip().split(":")[0] for line in tenant_block_yaml("t", as_jsonb_returns).splitlines()
    ]
    assert keys == [
        "t",
        "max_queriers_per_tenant",
        "query_priority",
        "enabled",
        "default_priority",
        "priorities",
        "- priority",
        "reserved_queriers",
        "query_attributes",
        "- regex",
        "time_window",
        "start",
        "end",
    ]
    assert overrides_yaml({"t": as_jsonb_returns}).splitlines()[1:] == [
        f"  {line}" for line in tenant_block_yaml("t", as_jsonb_returns).splitlines()
    ]
