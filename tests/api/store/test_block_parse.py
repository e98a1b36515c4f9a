"""A pasted tenant block is read as Cortex's loader reads it (`api.store.block_parse`).

Base-60 numbers are text and explicit tags other than the plain types are
refused, with the path and line, as the runtime-config import does.
"""

from __future__ import annotations

import pytest

from api.store.block_parse import parse_tenant_block


def test_a_base_60_number_is_refused_at_its_field_and_line_not_read_as_80() -> None:
    parsed = parse_tenant_block(
        "t1:\n  max_outstanding_requests_per_tenant: 5\n  max_queriers_per_tenant: 1:20\n"
    )
    assert parsed.config == {
        "max_outstanding_requests_per_tenant": 5,
        "max_queriers_per_tenant": "1:20",
    }
    assert [(e.path, e.line) for e in parsed.errors] == [("max_queriers_per_tenant", 3)]
    assert not parsed.ok


def test_a_number_tag_on_a_base_60_number_is_a_problem_at_its_line() -> None:
    parsed = parse_tenant_block(
        "max_outstanding_requests_per_tenant: 5\nmax_queriers_per_tenant: !!int 1:20\n"
    )
    assert parsed.config is None and parsed.syntax is not None
    assert "base-60 number" in parsed.syntax.message
    assert parsed.syntax.line == 2


@pytest.mark.parametrize(
    ("text", "tag", "path", "line"),
    [
        (
            "t1:\n  query_priority:\n    enabled: true\n    priorities:\n      - priority: 1\n"
            "        query_attributes:\n          - regex: !!binary /w==\n",
            "!!binary",
            "t1.query_priority.priorities[0].query_attributes[0].regex",
            7,
        ),
        ("max_queriers_per_tenant: 1\n!!binary aGk=: 2\n", "!!binary", "a key of the document", 2),
        ("query_priority: !!omap [{enabled: true}]\n", "!!omap", "query_priority", 1),
        ("query_rejection:\n  enabled: !custom yes\n", "!custom", "query_rejection.enabled", 2),
    ],
)
def test_an_explicit_tag_that_is_not_a_plain_type_is_a_problem_with_its_path_and_line(
    text: str, tag: str, path: str, line: int
) -> None:
    parsed = parse_tenant_block(text)
    assert parsed.config is None and parsed.syntax is not None and not parsed.errors
    assert (parsed.syntax.path, parsed.syntax.line) == (path, line)
    assert parsed.syntax.message.startswith(
        f"{tag} at {path}: an explicit tag Cortex's loader does not read"
    )


# Every form below is one Cortex v1.15.3's yaml.v2 decodes into the field's
# Go type (int, int64, bool, float64, string) as the value shown; PyYAML read
# `1e3`, `0o17`, `0X1F`, `+.5` and `y` as text, so the block was refused.
GO_FORMS_BLOCK = """\
yes:
  max_queriers_per_tenant: 1e3
  max_outstanding_requests_per_tenant: 0o17
  query_priority:
    enabled: y
    default_priority: 1.
    priorities:
      - priority: 0X1F
        reserved_queriers: +.5
        query_attributes:
          - regex: 1e3
            panel_id: 0o17
            dashboard_uid: n
"""


def test_values_cortex_reads_as_numbers_and_booleans_are_read_with_cortexs_values() -> None:
    parsed = parse_tenant_block(GO_FORMS_BLOCK)
    assert parsed.ok, parsed.problems
    # `yes:` is the tenant "yes", as Go decodes a map[string]*Limits key.
    assert parsed.pasted_tenant == "yes"
    assert parsed.config == {
        "max_queriers_per_tenant": 1000,
        "max_outstanding_requests_per_tenant": 15,
        "query_priority": {
            "enabled": True,
            "default_priority": 1,
            "priorities": [
                {
                    "priority": 31,
                    "reserved_queriers": 0.5,
                    "query_attributes": [
                        {"regex": "1e3", "panel_id": "0o17", "dashboard_uid": "n"}
                    ],
                }
            ],
        },
    }


def test_values_cortex_refuses_for_their_fields_are_refused_at_their_paths_and_lines() -> None:
    # yaml.v2: `1e400` overflows, so it is the text "1e400" (cannot unmarshal
    # !!str into int); `1` is no bool, `y` no integer, `n` no float64.
    parsed = parse_tenant_block(
        "max_queriers_per_tenant: 1e400\n"
        "query_priority:\n"
        "  enabled: 1\n"
        "  default_priority: y\n"
        "  priorities:\n"
        "    - priority: 2\n"
        "      reserved_queriers: n\n"
        "      query_attributes: [{regex: x}]\n"
    )
    assert not parsed.ok and parsed.syntax is None
    assert [(e.path, e.line) for e in parsed.errors] == [
        ("max_queriers_per_tenant", 1),
        ("query_priority.enabled", 3),
        ("query_priority.default_priority", 4),
        ("query_priority.priorities[0].reserved_queriers", 7),
    ]
    assert parsed.errors[0].message == "must be an integer, got '1e400'"


def test_a_fraction_in_an_integer_field_is_refused_at_its_line_not_truncated() -> None:
    # Go would store 1.5 as 1 without a word; refused here instead.
    parsed = parse_tenant_block(
        "max_queriers_per_tenant: 2\nmax_outstanding_requests_per_tenant: 1.5\n"
    )
    assert [(e.path, e.line) for e in parsed.errors] == [("max_outstanding_requests_per_tenant", 2)]


def test_a_date_is_text_as_cortex_reads_it_and_refused_at_its_field() -> None:
    # PyYAML could not even build 2024-13-45 (the whole block was a syntax
    # error); yaml.v2 reads any date into a non-time field as its text.
    parsed = parse_tenant_block("max_queriers_per_tenant: 2024-13-45\n")
    assert parsed.syntax is None
    assert [(e.path, e.message, e.line) for e in parsed.errors] == [
        ("max_queriers_per_tenant", "must be an integer, got '2024-13-45'", 1)
    ]
