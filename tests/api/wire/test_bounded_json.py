"""JSON decoding with a nesting limit: exact depth, strings ignored, never a RecursionError."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from api.wire.bounded_json import MAX_JSON_DEPTH, JsonTooDeep, json_depth, loads_bounded


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab,:\n\x01'),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(alphabet='[]{}"\\ab', max_size=4), children, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_the_measured_depth_is_the_true_depth_whatever_the_strings_hold(value: Any) -> None:
    assert json_depth(json.dumps(value)) == depth_of(value)


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_a_value_within_the_limit_decodes_as_json_loads_does(value: Any) -> None:
    text = json.dumps(value)
    assert loads_bounded(text) == json.loads(text)
    assert loads_bounded(text.encode()) == json.loads(text)


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 990, 1_000, 100_000])
def test_nesting_past_the_limit_is_refused_naming_the_limit(depth: int) -> None:
    for text in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth):
        with pytest.raises(JsonTooDeep, match=f"limit is {MAX_JSON_DEPTH}"):
            loads_bounded(text)


def test_nesting_at_the_limit_decodes() -> None:
    text = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert json_depth(text) == MAX_JSON_DEPTH
    assert loads_bounded(text) is not None


def test_brackets_inside_strings_never_count() -> None:
    text = json.dumps({"query": "[" * 10_000, "escaped": '\\"[[[[' * 1_000})
    assert json_depth(text) == 1
    assert loads_bounded(text)["query"] == "[" * 10_000


@pytest.mark.parametrize(
    "text",
    [
        '"' + '\\"' * 100_000,  # a string left open, full of escaped quotes
        '"' + '\\"' * 100_000 + "\\",  # and a trailing backslash
        '"' * 100_001,
        "[" * 50_000 + '"',
        '{"a": "\x00' + "[" * 5_000,  # a control character stops a parser early
    ],
)
def test_malformed_hostile_text_is_a_value_error_never_a_crash(text: str) -> None:
    with pytest.raises(ValueError):
        loads_bounded(text)


def test_an_unclosed_deep_text_is_refused_as_too_deep() -> None:
    with pytest.raises(JsonTooDeep):
        loads_bounded("[" * 5_000)
