"""`explain/` reads a time given as text as the querier (and so the gRPC door) reads it."""

from __future__ import annotations

import pytest

from scheduler_core.cortex_http import parse_forwarded

URL = "/api/v1/explain/"
NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def _select_end(client, start: str) -> float:
    body = {"tenant": "t1", "query": "up", "api_type": "query", "start": start, "now": NOW}
    response = client.post(URL, body, format="json")
    assert response.status_code == 200, response.content
    return response.json()["select_range"]["end"]


@pytest.mark.parametrize(
    "text",
    [
        "2023-11-14T22:13:20",  # no zone: was read in the server's own time zone
        "2023-11-14",
        "2023-11-14 22:13:20Z",
        "2023-11-14T22:13:20+0000",
        " 1700000000",
    ],
)
def test_a_time_prometheus_refuses_is_400_naming_the_field(editor_api, text):
    response = editor_api.post(URL, {"tenant": "t1", "start": text}, format="json")
    assert response.status_code == 400
    assert "RFC 3339" in response.json()["start"][0]


def test_a_fraction_of_a_second_is_truncated_to_the_millisecond_as_the_door_reads_it(
    editor_api,
):
    text = "2023-11-14T22:13:20.9996Z"
    door = parse_forwarded("GET", f"/api/v1/query?query=up&time={text}", {}, b"", now=NOW)
    assert door.start == NOW + 0.999
    assert _select_end(editor_api, text) == door.start


def test_a_time_beyond_prometheus_range_says_so(editor_api):
    response = editor_api.post(URL, {"tenant": "t1", "now": "1e300"}, format="json")
    assert response.status_code == 400
    assert "RFC 3339" not in response.json()["now"][0]


def test_unix_seconds_as_text_and_rfc_3339_with_a_zone_still_read(editor_api):
    assert _select_end(editor_api, "1700000000") == NOW
    assert _select_end(editor_api, "2023-11-15T00:13:20+02:00") == NOW


def test_the_documented_example_with_null_times_and_step_is_explained(editor_api):
    """docs/api.md's example body sends `end`, `step` and `now` as null: not given."""
    body = {
        "tenant": "team-a",
        "query": "max(up)",
        "api_type": "query",
        "start": NOW,
        "end": None,
        "step": None,
        "headers": {"User-Agent": "Grafana/10", "X-Dashboard-Uid": "ops", "X-Panel-Id": "4"},
        "now": None,
        "tenant_config": None,
    }
    response = editor_api.post(URL, body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["select_range"]["end"] == NOW


def _explain_step(client, step, priority: int, step_limit: dict[str, float]):
    """Explain a range query of `step` for a tenant whose one rule gives `priority`
    to a step within `step_limit`."""
    rule = {"priority": priority, "query_attributes": [{"query_step_limit": step_limit}]}
    body = {
        "tenant": "t1",
        "query": "up",
        "api_type": "query_range",
        "start": NOW - 3600,
        "end": NOW,
        "step": step,
        "now": NOW,
        "tenant_config": {"query_priority": {"enabled": True, "priorities": [rule]}},
    }
    return client.post(URL, body, format="json")


@pytest.mark.parametrize(("text", "seconds"), [("15", 15.0), ("0.5", 0.5), ("1m30s", 90.0)])
def test_a_step_given_as_text_is_read_as_the_door_reads_a_step_parameter(editor_api, text, seconds):
    response = _explain_step(editor_api, text, 3, {"max": seconds})
    assert response.status_code == 200, response.content
    door = parse_forwarded(
        "GET", f"/api/v1/query_range?query=up&start=1&end=2&step={text}", {}, b"", now=NOW
    )
    assert door.step == seconds and response.json()["priority"] == 3


def _explained_step(client, step):
    """Priority 5 when the step explain read is at least 1s, else 0; or the 400's body."""
    response = _explain_step(client, step, 5, {"min": 1})
    return response.json()["priority"] if response.status_code == 200 else response.json()


def test_a_step_given_as_a_number_is_read_as_the_text_and_the_websocket_door_read_it(editor_api):
    # 1.0015 truncated to the millisecond is 1.001 (>= 1s); 0.9996 is 0.999.
    assert _explained_step(editor_api, 1.0015) == _explained_step(editor_api, "1.0015") == 5
    assert _explained_step(editor_api, 0.9996) == _explained_step(editor_api, "0.9996") == 0


def test_a_number_step_under_a_millisecond_is_refused_as_enqueue_refuses_it(editor_api):
    assert "step" in _explained_step(editor_api, 0.0009)
