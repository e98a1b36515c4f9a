"""The queue listing and both cancels report every problem of a request at once.

Each check used to stop at the first, so an operator fixed one field and
was then told of the next; docs/api.md ("Errors") promises them all, and a
refused cancel still cancels nothing.
"""

from __future__ import annotations

from typing import Any

from api.store.models import OperatorCancel
from tests.api.rest.test_rest_queue_requests import runtime  # noqa: F401 (the fixture)

BAD_FILTER = {"priority": "high", "min_wait": "-1", "regex": "a(", "component": "disk"}


def test_a_listing_names_every_bad_parameter(viewer_api: Any, runtime: Any) -> None:  # noqa: F811
    response = viewer_api.get("/api/v1/queue/requests/", {**BAD_FILTER, "limit": "0"})
    assert response.status_code == 400
    assert set(response.json()) == {*BAD_FILTER, "limit"}


def test_a_cancel_by_filter_names_every_bad_field_and_cancels_nothing(
    editor_api: Any,
    runtime: Any,  # noqa: F811
) -> None:
    body = {
        "tenant": "acme",
        **BAD_FILTER,
        "state": "in_flight",
        "dry_run": "yes",
        "note": 5,
        "colour": "red",
        "size": 1,
    }
    response = editor_api.post("/api/v1/queue/cancel/", body, format="json")
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {*BAD_FILTER, "state", "dry_run", "note", "colour", "size"}
    assert errors["colour"] == errors["size"] == ["unknown field"]
    assert len(runtime.queue) == 5 and not OperatorCancel.objects.exists()


def test_a_cancel_of_one_request_names_every_bad_field_and_cancels_nothing(
    editor_api: Any,
    runtime: Any,  # noqa: F811
) -> None:
    body = {"note": "x" * 501, "replica": 3, "nte": "oops", "why": "?"}
    response = editor_api.post("/api/v1/queue/requests/ws:c1:2/cancel/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "note": ["at most 500 characters"],
        "replica": ["must be a string, got int"],
        "nte": ["unknown field"],
        "why": ["unknown field"],
    }
    assert len(runtime.queue) == 5 and not OperatorCancel.objects.exists()


def test_a_good_cancel_by_filter_still_cancels_what_it_names(
    editor_api: Any,
    runtime: Any,  # noqa: F811
) -> None:
    body = {"tenant": "acme", "component": "ingester", "note": "n"}
    response = editor_api.post("/api/v1/queue/cancel/", body, format="json")
    assert response.status_code == 200
    assert response.json() == {"matched": 3, "cancelled": 3}
    assert OperatorCancel.objects.get().note == "n"


def test_a_listing_reads_numbers_only_in_ascii_decimals_and_priorities_within_int64(
    viewer_api: Any,
    runtime: Any,  # noqa: F811
) -> None:
    # float() read a fullwidth "１", "1_0", "1e3" and " 1" as numbers, and a
    # priority of 40 nines was taken though no request can have one.
    for name, value in [
        ("min_wait", "\uff11"),
        ("min_wait", "1_0"),
        ("min_wait", "1e3"),
        ("min_wait", " 1"),
        ("min_wait", "inf"),
        ("priority", "9" * 40),
        ("priority", "-9223372036854775809"),
    ]:
        response = viewer_api.get("/api/v1/queue/requests/", {name: value})
        assert response.status_code == 400, (name, value)
        assert set(response.json()) == {name}, (name, value)
    for name, value in [("min_wait", "0.5"), ("priority", "9223372036854775807")]:
        assert viewer_api.get("/api/v1/queue/requests/", {name: value}).status_code == 200
