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
