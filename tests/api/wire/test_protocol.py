"""Parsing of the websocket protocol's client messages."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from api.wire.json_codec import compact_dumps
from api.wire.protocol import (
    FRONTEND_PARSERS,
    MAX_MESSAGE_BYTES,
    MIN_WORKERS,
    QUERIER_PARSERS,
    Cancel,
    Enqueue,
    Hello,
    ProtocolError,
    QuerierResult,
    Shutdown,
    decode,
    error_message,
    parse,
)
from scheduler_core.federation import MAX_ORG_ID_LENGTH


def frontend(data: dict[str, Any]) -> Any:
    return parse(data, FRONTEND_PARSERS)


def test_an_enqueue_with_every_field_becomes_a_typed_message() -> None:
    msg = frontend(
        {
            "type": "enqueue",
            "id": "r1",
            "tenant": "t",
            "query": "up",
            "api_type": "query_range",
            "start": 10,
            "end": 20.5,
            "step": 5,
            "headers": {"User-Agent": "grafana"},
            "component": "store-gateway",
        }
    )
    assert msg == Enqueue(
        "r1", "t", "up", "query_range", 10.0, 20.5, 5.0, {"User-Agent": "grafana"}, "store-gateway"
    )


def test_a_step_without_an_api_type_means_a_range_query() -> None:
    assert (
        frontend({"type": "enqueue", "id": 1, "tenant": "t", "step": 15}).api_type == "query_range"
    )
    assert frontend({"type": "enqueue", "id": 1, "tenant": "t"}).api_type == "query"


def test_a_null_api_type_takes_the_default_like_every_optional_field() -> None:
    # It once reached an assertion, which the socket answered as a 500.
    message = {"type": "enqueue", "id": 0, "tenant": "t", "api_type": None}
    assert frontend(message).api_type == "query"
    assert frontend(message | {"step": 15}).api_type == "query_range"


def test_an_org_id_cortex_would_refuse_is_refused_in_its_words() -> None:
    with pytest.raises(ProtocolError) as caught:
        frontend({"type": "enqueue", "id": "r", "tenant": "ok|team a"})
    assert caught.value.field == "tenant"
    assert str(caught.value) == "tenant ID 'team a' contains unsupported character ' '"
    for org_id in ("a!-_.*'()Z9", "team-a|team-b"):
        assert frontend({"type": "enqueue", "id": "r", "tenant": org_id}).tenant == org_id


def test_a_tenant_longer_than_a_cortex_frontend_can_forward_is_refused_naming_the_field() -> None:
    tenant = "a|" * (MAX_ORG_ID_LENGTH // 2) + "b"
    with pytest.raises(ProtocolError) as caught:
        frontend({"type": "enqueue", "id": "r", "tenant": tenant})
    assert caught.value.field == "tenant"
    assert str(caught.value) == (
        f"tenant is {len(tenant)} characters long; at most {MAX_ORG_ID_LENGTH} may be "
        "sent, the longest X-Scope-OrgID a Cortex query-frontend can forward"
    )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"id": None}, "id"),
        ({"id": True}, "id"),
        ({"id": ""}, "id"),
        ({"id": 10**400}, "id"),
        ({"id": -(2**63) - 1}, "id"),
        ({"tenant": ""}, "tenant"),
        ({"tenant": "x" * 151}, "tenant"),
        ({"tenant": "t\x00"}, "tenant"),
        ({"tenant": "a||b"}, "tenant"),
        ({"tenant": "a|" + "x" * 151}, "tenant"),
        ({"tenant": "équipe"}, "tenant"),
        ({"start": "now"}, "start"),
        ({"start": 30, "end": 20}, "start"),
        ({"step": 0}, "step"),
        ({"api_type": "graphql"}, "api_type"),
        ({"component": "disk"}, "component"),
        ({"headers": {"a": 1}}, "headers"),
        ({"query": 5}, "query"),
    ],
)
def test_each_bad_enqueue_field_is_named_in_the_error(change: dict[str, Any], field: str) -> None:
    data = {"type": "enqueue", "id": "r", "tenant": "t", "query": "up"} | change
    with pytest.raises(ProtocolError) as caught:
        frontend(data)
    assert caught.value.field == field


def test_an_error_keeps_the_client_id_when_it_could_be_read() -> None:
    with pytest.raises(ProtocolError) as caught:
        frontend({"type": "enqueue", "id": 7, "tenant": ""})
    assert error_message(caught.value) == {
        "type": "error",
        "id": 7,
        "status": 400,
        "error": "tenant must be a non-empty string",
        "field": "tenant",
    }


def test_unknown_types_and_other_endpoints_messages_are_refused() -> None:
    with pytest.raises(ProtocolError) as caught:
        frontend({"type": "hello", "querier_id": "q"})
    assert caught.value.field == "type"
    with pytest.raises(ProtocolError):
        frontend({"id": 1})


def test_decode_accepts_only_json_objects_in_text_frames() -> None:
    assert decode('{"type": "cancel", "id": 1}') == {"type": "cancel", "id": 1}
    for bad in ("[1]", "nope", None, '"text"'):
        with pytest.raises(ProtocolError) as caught:
            decode(bad)
        assert caught.value.field is None


@pytest.mark.parametrize(
    ("frame", "field", "rid"),
    [
        (r'{"type": "enqueue", "id": 1, "query": "up\ud800"}', "query", 1),
        (r'{"type": "enqueue", "id": "q", "headers": {"\udc00": "x"}}', "headers", "q"),
        (r'{"type": "hello", "querier_id": "q\uDBFF"}', "querier_id", None),
        (r'{"type": "enqueue", "id": "\ud800"}', "id", None),
        (r'{"\ud800": 1}', None, None),
    ],
)
def test_a_lone_surrogate_anywhere_is_refused_naming_its_field(
    frame: str, field: str | None, rid: Any
) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode(frame)
    assert (caught.value.field, caught.value.id) == (field, rid)
    assert "lone UTF-16 surrogate" in caught.value.message
    # The reply itself must be writable as UTF-8.
    json.dumps(error_message(caught.value, 400), ensure_ascii=False).encode()


@pytest.mark.parametrize(
    ("frame", "field", "rid"),
    [
        ('{"type": "enqueue", "id": 7, "tenant": "a", "tenant": "b"}', "tenant", 7),
        ('{"type": "enqueue", "id": "r", "headers": {"x": "1", "x": "2"}}', "headers", "r"),
        ('{"type": "enqueue", "id": 1, "id": 2}', "id", None),
        ('{"type": "cancel", "id": true, "type": "cancel"}', "type", None),
    ],
)
def test_a_name_given_twice_is_refused_naming_its_top_level_field(
    frame: str, field: str, rid: Any
) -> None:
    # The last name would win, so the frame would mean something other than
    # what a reader of its first half (a proxy, a log) took it to mean.
    with pytest.raises(ProtocolError) as caught:
        decode(frame)
    assert (caught.value.field, caught.value.id) == (field, rid)
    assert "duplicate key" in caught.value.message


def test_escaped_text_that_is_valid_unicode_passes() -> None:
    frame = r'{"type": "enqueue", "query": "\ud83d\ude00 \u00e9 \u005c"}'
    assert decode(frame)["query"] == "\U0001f600 \u00e9 \\"


def test_cancel_and_shutdown_parse() -> None:
    assert frontend({"type": "cancel", "id": "x"}) == Cancel("x")
    assert parse({"type": "shutdown"}, QUERIER_PARSERS) == Shutdown()


def test_hello_raises_the_worker_count_to_the_minimum() -> None:
    assert parse({"type": "hello", "querier_id": "q"}, QUERIER_PARSERS) == Hello("q", MIN_WORKERS)
    assert parse({"type": "hello", "querier_id": "q", "workers": 1}, QUERIER_PARSERS) == Hello(
        "q", 4
    )
    assert parse({"type": "hello", "querier_id": "q", "workers": 9}, QUERIER_PARSERS) == Hello(
        "q", 9
    )
    for workers in (0, 1000, "4"):
        with pytest.raises(ProtocolError):
            parse({"type": "hello", "querier_id": "q", "workers": workers}, QUERIER_PARSERS)


@pytest.mark.parametrize(
    ("querier_id", "problem"),
    [
        ("q\nforged", "control character U+000A"),
        ("q\x00", "control character U+0000"),
        ("q\x85", "control character U+0085"),
        ("q" * 257, "longer than 256 characters"),
    ],
)
def test_a_hello_with_a_querier_id_no_log_could_show_is_refused_naming_it(
    querier_id: str, problem: str
) -> None:
    with pytest.raises(ProtocolError) as refused:
        parse({"type": "hello", "querier_id": querier_id}, QUERIER_PARSERS)
    assert refused.value.field == "querier_id"
    assert problem in str(refused.value)


def test_a_result_needs_worker_and_id_and_a_real_status() -> None:
    ok = parse({"type": "result", "worker": 2, "id": "ws:f-1:1", "body": {"a": 1}}, QUERIER_PARSERS)
    assert ok == QuerierResult(2, "ws:f-1:1", 200, {"a": 1})
    for bad in ({"worker": 2}, {"id": "x"}, {"worker": 2, "id": "x", "status": 99}):
        with pytest.raises(ProtocolError):
            parse({"type": "result"} | bad, QUERIER_PARSERS)


def test_non_finite_numbers_are_refused() -> None:
    with pytest.raises(ProtocolError):
        frontend(json.loads('{"type": "enqueue", "id": 1, "tenant": "t", "start": NaN}'))


_KEYS = (
    "type", "id", "tenant", "query", "api_type", "start", "end", "step", "headers",
    "component", "querier_id", "workers", "worker", "status", "body",
)  # fmt: skip
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(("query", "query_range", "ingester", "unknown", "")),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_MESSAGES = st.builds(
    lambda kind, fields: {"type": kind, **fields},
    st.sampled_from(("enqueue", "cancel", "hello", "result", "shutdown")),
    st.dictionaries(st.sampled_from(_KEYS[1:]), _JSON, max_size=9),
)


@settings(max_examples=600)
@given(_MESSAGES)
def test_any_json_object_is_either_a_message_or_a_protocol_error_with_a_json_reply(
    data: dict[str, Any],
) -> None:
    for parsers in (FRONTEND_PARSERS, QUERIER_PARSERS):
        try:
            parse(data, parsers)
        except ProtocolError as exc:
            assert exc.field is None or exc.field in _KEYS
            compact_dumps(error_message(exc))


def test_an_optional_text_of_the_wrong_type_is_not_said_to_need_content() -> None:
    # An empty query is accepted: "must be a non-empty string" would send a client astray.
    with pytest.raises(ProtocolError) as caught:
        frontend({"type": "enqueue", "id": "q", "tenant": "t", "query": 5})
    assert (caught.value.field, caught.value.message) == ("query", "query must be a string")


def test_a_frame_over_the_limit_is_said_in_characters_as_it_is_counted() -> None:
    with pytest.raises(ProtocolError) as caught:
        decode("x" * (MAX_MESSAGE_BYTES + 1))
    assert caught.value.message == f"message longer than {MAX_MESSAGE_BYTES} characters"


def test_a_refusal_quotes_only_the_start_of_a_huge_type_or_duplicate_key() -> None:
    with pytest.raises(ProtocolError) as caught:
        frontend({"type": "t" * 900_000})
    assert len(caught.value.message) < 1_000
    assert "... (900000 characters)" in caught.value.message
    with pytest.raises(ProtocolError) as caught:
        key = json.dumps("k" * 100_000)
        decode(f"{{{key}: 1, {key}: 2}}")
    assert len(caught.value.message) < 1_000 and "(100000 characters)" in caught.value.message
