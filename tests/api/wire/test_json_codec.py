"""The protocols' JSON codec gives exactly what the standard library gives, errors included."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from api.wire.json_codec import DuplicateJsonKey, compact_dumps, loads

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and infinities included: both must refuse them
    | st.text()
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=5) | st.integers() | st.booleans(), inner, max_size=4)
    ),
    max_leaves=20,
)


def outcome(call: Any, argument: Any) -> tuple[str, Any]:
    try:
        result = call(argument)
    except (ValueError, TypeError) as exc:
        return type(exc).__name__, str(exc)
    # NaN is not equal to itself; compare what it would be written as.
    return "ok", json.dumps(result) if isinstance(result, float) and math.isnan(result) else result


def stdlib_dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False, check_circular=False)


@settings(max_examples=400)
@given(values)
def test_encoding_any_value_gives_the_standard_librarys_text_or_its_error(value: Any) -> None:
    assert outcome(compact_dumps, value) == outcome(stdlib_dumps, value)


@settings(max_examples=400)
@given(
    values.filter(lambda v: outcome(stdlib_dumps, v)[0] == "ok").map(stdlib_dumps),
    st.sampled_from(["", " ", "\n\t", "\ufeff"]),
    st.sampled_from(["", " ", "\r\n", " x", "}", ",1"]),
)
def test_decoding_any_document_with_any_padding_gives_what_json_loads_gives(
    text: str, before: str, after: str
) -> None:
    padded = before + text + after
    assert outcome(loads, padded) == outcome(json.loads, padded)


@settings(max_examples=400)
@given(st.text(alphabet='{}[]",:0123456789.-+eEtruefalsnNIaiy \\', max_size=30))
def test_decoding_any_fragment_of_json_gives_what_json_loads_gives(text: str) -> None:
    assert outcome(loads, text) == outcome(json.loads, text)


def test_a_value_json_has_no_form_for_is_refused_naming_its_type() -> None:
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        compact_dumps({"a": {1}})


def test_an_error_mid_message_leaves_the_next_message_unaffected() -> None:
    with pytest.raises(ValueError, match="Out of range float"):
        compact_dumps({"a": [1, {"b": float("nan")}]})
    assert compact_dumps({"a": [1, {"b": 2}]}) == '{"a":[1,{"b":2}]}'


def repeats_a_name(text: str) -> bool:
    """Whether some object in the document gives a name twice (keys False and
    "false" of one dict are written as the same name)."""
    repeated = False

    def note(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeated
        repeated = repeated or len({k for k, _ in pairs}) != len(pairs)
        return dict(pairs)

    json.loads(text, object_pairs_hook=note)
    return repeated


@settings(max_examples=200)
@given(
    values.filter(lambda v: outcome(stdlib_dumps, v)[0] == "ok")
    .map(stdlib_dumps)
    .filter(lambda text: not repeats_a_name(text))
)
def test_with_unique_keys_a_document_without_repeated_names_decodes_as_json_loads_does(
    text: str,
) -> None:
    assert outcome(lambda t: loads(t, unique_keys=True), text) == outcome(json.loads, text)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('{"tenant": "a", "tenant": "b"}', "tenant"),
        ('{"headers": {"x": 1, "y": 2, "x": 3}}', "x"),
        ('[1, {"a": [{"b": 1, "b": 1}]}]', "b"),
        (' {"a": 1, "a": 2} ', "a"),  # padded: through json.loads, the same refusal
    ],
)
def test_with_unique_keys_a_name_given_twice_at_any_depth_is_refused_naming_it(
    text: str, key: str
) -> None:
    with pytest.raises(DuplicateJsonKey, match=f"duplicate key '{key}' in one object") as caught:
        loads(text, unique_keys=True)
    assert caught.value.key == key
    assert isinstance(loads(text), dict | list)  # without it, the last name wins
