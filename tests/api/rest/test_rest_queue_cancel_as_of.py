"""`queue/cancel/`'s `as_of` and `enqueued_before`: a cancel takes what its count counted.

The runtime runs on a fake clock and the wall clock (`queue_rows.wall_clock`)
is moved with it, a whole number of seconds from now, so every instant here
is exact and within the server's time (which `enqueued_before` is checked
against). The same across replicas is in tests/api/wire/test_queue_peers_instant.py.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from api.store.models import OperatorCancel
from api.wire import queue_rows, runtime_host
from scheduler_core.model import Request
from scheduler_core.runtime import SchedulerRuntime
from tests.fakes import BareHost, FakeClock

URL = "/api/v1/queue/cancel/"
# Unix seconds at which the fake clock reads 0: whole, so instants add exactly.
BASE = float(int(time.time()) - 1000)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    clock = FakeClock(1000.0)
    monkeypatch.setattr(queue_rows, "wall_clock", lambda: BASE + clock.now)
    return clock


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch, clock: FakeClock) -> SchedulerRuntime:
    """acme's up-0, up-1, up-2 enqueued at 1000, 1001, 1002; the clock then reads 1003."""
    rt = SchedulerRuntime(clock=clock)
    enqueue(rt, clock, "up-", range(3), start=1000.0)
    clock.now = 1003.0
    host = BareHost(rt)
    monkeypatch.setattr(runtime_host, "started", lambda: True)
    monkeypatch.setattr(runtime_host, "get_host", lambda: host)
    return rt


def enqueue(rt: SchedulerRuntime, clock: FakeClock, prefix: str, ns: Any, start: float) -> None:
    for i, n in enumerate(ns):
        clock.now = start + i
        rt.enqueue(Request(id=f"{prefix}{n}", tenant_id="acme", query=f"sum(up{{n='{n}'}})"))


def queued(rt: SchedulerRuntime) -> list[str]:
    return [r.id for r in rt.queue.listing().queued()]


@pytest.mark.parametrize("narrowing", [{}, {"search": "UP"}], ids=["counters", "scan"])
def test_the_cancel_given_a_dry_run_s_as_of_leaves_what_arrived_after_the_count(
    editor_api, runtime, clock, narrowing
):
    body = {"tenant": "acme", **narrowing}
    counted = editor_api.post(URL, {**body, "dry_run": True}, format="json").json()
    assert counted == {"matched": 3, "cancelled": 0, "as_of": BASE + 1003.0}
    # Two more that match arrive while the operator reads "Cancel 3?".
    enqueue(runtime, clock, "late-", range(2), start=1004.0)
    clock.now = 1010.0
    body = {**body, "enqueued_before": counted["as_of"], "note": "confirmed 3"}
    done = editor_api.post(URL, body, format="json")
    assert done.json() == {"matched": 3, "cancelled": 3}
    assert queued(runtime) == ["late-0", "late-1"]
    record = OperatorCancel.objects.get()
    assert record.filter == {"tenant": "acme", **narrowing, "enqueued_before": BASE + 1003.0}
    assert (record.matched, record.cancelled) == (3, 3)


def test_a_request_dispatched_since_the_count_is_not_cancelled_and_the_answer_says_so(
    editor_api, runtime, clock
):
    as_of = editor_api.post(URL, {"tenant": "acme", "dry_run": True}, format="json").json()
    runtime.connect_querier("q-1")
    taken, _ = runtime.queue.dequeue("q-1", 0)
    assert taken is not None and taken.id == "up-0"
    done = editor_api.post(
        URL, {"tenant": "acme", "enqueued_before": as_of["as_of"]}, format="json"
    )
    assert done.json() == {"matched": 2, "cancelled": 2}
    assert queued(runtime) == [] and runtime.queue.listing().find("up-0") is not None


def test_an_instant_takes_the_requests_enqueued_at_it_and_before_in_every_form(
    editor_api, viewer_api, runtime
):
    at_1001 = BASE + 1001.0
    rfc3339 = datetime.fromtimestamp(at_1001, UTC).isoformat().replace("+00:00", "Z")
    for instant in (at_1001, str(at_1001), rfc3339):
        body = {"tenant": "acme", "enqueued_before": instant, "dry_run": True}
        counted = editor_api.post(URL, body, format="json").json()
        # The count is of requests enqueued by its filter's instant; `as_of` is still now.
        assert (counted["matched"], counted["as_of"]) == (2, BASE + 1003.0), instant
        listed = viewer_api.get(
            "/api/v1/queue/requests/", {"tenant": "acme", "enqueued_before": instant}
        )
        assert [r["id"] for r in listed.json()["results"]] == ["up-0", "up-1"]
        assert listed.json()["total"] == 2
    assert queued(runtime) == ["up-0", "up-1", "up-2"]


def test_an_instant_a_little_ahead_of_this_server_s_clock_is_taken_as_a_peer_s(editor_api, runtime):
    """A count answered by a replica whose clock runs ahead: still a time, not a mistake."""
    body = {"tenant": "acme", "enqueued_before": time.time() + 30, "dry_run": True}
    assert editor_api.post(URL, body, format="json").json()["matched"] == 3


def _far_ahead() -> float:
    return time.time() + 3600


@pytest.mark.parametrize(
    "instant, says",
    [
        ("yesterday", "unix seconds or an RFC 3339"),
        ("", "unix seconds or an RFC 3339"),
        ("2026-01-02T03:04:05", "unix seconds or an RFC 3339"),  # no zone
        (True, "unix seconds or an RFC 3339"),
        ([1700000000], "unix seconds or an RFC 3339"),
        ({"as_of": 1700000000}, "unix seconds or an RFC 3339"),
        (-1, "at or after 1970"),
        (10**400, "a finite number of seconds"),
        ("ms", "not milliseconds"),  # a JavaScript Date.now(): 1,000 times too far
        ("hour", "not milliseconds"),
    ],
)
def test_an_instant_that_is_no_time_or_not_yet_is_a_400_naming_it_and_cancels_nothing(
    editor_api, viewer_api, runtime, instant, says
):
    if instant == "ms":
        instant = time.time() * 1000
    elif instant == "hour":
        instant = _far_ahead()
    for dry_run in (False, True):
        body = {"tenant": "acme", "enqueued_before": instant, "dry_run": dry_run}
        response = editor_api.post(URL, body, format="json")
        assert response.status_code == 400, response.json()
        assert says in " ".join(response.json()["enqueued_before"])
    assert queued(runtime) == ["up-0", "up-1", "up-2"]
    assert not OperatorCancel.objects.exists()
    if isinstance(instant, str | float):
        listed = viewer_api.get("/api/v1/queue/requests/", {"enqueued_before": instant})
        assert listed.status_code == 400 and "enqueued_before" in listed.json()


def test_a_bad_instant_is_named_beside_the_other_bad_fields(editor_api, runtime):
    body = {"tenant": "acme", "enqueued_before": "soon", "regex": "(", "dry_run": "yes"}
    response = editor_api.post(URL, body, format="json")
    assert response.status_code == 400
    assert {"enqueued_before", "regex", "dry_run"} <= response.json().keys()
    assert queued(runtime) == ["up-0", "up-1", "up-2"]


def test_without_a_runtime_a_dry_run_still_says_when_it_counted(editor_api, clock):
    counted = editor_api.post(URL, {"tenant": "acme", "dry_run": True}, format="json").json()
    assert counted == {"matched": 0, "cancelled": 0, "as_of": BASE + 1000.0}
