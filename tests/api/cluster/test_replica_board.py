"""The replica board: which peers' summaries it keeps, and which replicas it reports.

Fed raw Redis values by hand, no Redis: it skips itself, bad entries and
stale peers, and tells a crashed replica (reported down) from one that
withdrew gracefully.
"""

from __future__ import annotations

import json

import pytest

from api.cluster.replica_board import MISSING_MEMORY_SECONDS, STALE_SECONDS, ReplicaBoard
from api.cluster.replicas import summarize
from api.wire.frontends import FrontendRow
from tests.api.cluster.replica_summaries import WALL, encoded, snapshot


def test_the_board_skips_itself_bad_entries_and_stale_peers() -> None:
    board = ReplicaBoard("a")
    board.accept(
        [
            encoded("a", WALL),
            encoded("b", WALL - 0.5),
            encoded("c", WALL - STALE_SECONDS - 1),
            b"{not json",
            None,
        ]
    )
    assert [p.replica for p in board.peers] == ["b", "c"]
    assert [p.replica for p in board.fresh_peers(WALL)] == ["b"]
    view = board.view(snapshot(1000.0, []), WALL)
    assert view is not None and view.replicas == ("a", "b")


def test_a_peer_whose_summary_went_stale_takes_its_frontends_with_it() -> None:
    row = FrontendRow("websocket", "10.0.0.1:5000", "fe", 1, 0, 1.0)
    raws = [
        json.dumps(
            summarize(snapshot(1.0, []), replica=r, wall_time=at, stats=None, frontends=[row])
        ).encode()
        for r, at in (("b", WALL - 0.5), ("c", WALL - 2.5))
    ]
    board = ReplicaBoard("a")
    board.accept(raws)
    view = board.view(snapshot(1000.0, []), WALL)
    assert view is not None and [f.replica for f in view.peer_frontends] == ["b", "c"]
    later = board.view(snapshot(1000.0, []), WALL + 1.0)  # c is now over STALE_SECONDS old
    assert later is not None and [f.replica for f in later.peer_frontends] == ["b"]
    assert later.frontends_missing == ()


def test_a_lone_replica_has_no_merged_view() -> None:
    board = ReplicaBoard("a")
    board.accept([encoded("a", WALL)])
    assert board.view(snapshot(1000.0, []), WALL) is None


def test_a_peer_that_stops_publishing_without_withdrawing_is_reported_down() -> None:
    board = ReplicaBoard("a")
    board.accept([encoded("b", WALL)])
    board.note_registry({"a": WALL, "b": WALL}, WALL)
    assert board.replica_states(WALL) == [("a", True), ("b", True)]
    # b crashed: still registered, its summary gone.
    later = WALL + 10
    board.accept([None])
    board.note_registry({"a": later, "b": WALL}, later)
    assert board.replica_states(later) == [("a", True), ("b", False)]
    # The registry prunes it after a minute; it is still remembered as down.
    pruned = WALL + 120
    board.note_registry({"a": pruned}, pruned)
    assert board.replica_states(pruned) == [("a", True), ("b", False)]
    # ... until MISSING_MEMORY_SECONDS after its last summary.
    gone = WALL + MISSING_MEMORY_SECONDS + 1
    board.note_registry({"a": gone}, gone)
    assert board.replica_states(gone) == [("a", True)]


def test_a_peer_that_withdrew_gracefully_is_not_reported_missing() -> None:
    board = ReplicaBoard("a")
    board.accept([encoded("b", WALL)])
    board.note_registry({"a": WALL, "b": WALL}, WALL)
    board.accept([])
    board.note_registry({"a": WALL + 2}, WALL + 2)
    assert board.replica_states(WALL + 2) == [("a", True)]


def test_without_a_fresh_registry_read_only_this_replica_is_reported() -> None:
    board = ReplicaBoard("a")
    board.accept([encoded("b", WALL)])
    board.note_registry({"a": WALL, "b": WALL}, WALL)
    assert board.replica_states(WALL + STALE_SECONDS + 1) == [("a", True)]


def test_while_the_registry_cannot_be_read_every_known_peer_is_unreachable() -> None:
    """Redis down: the board emptied and answers passed for a lone replica's."""
    board = ReplicaBoard("a")
    board.accept([encoded("b", WALL), encoded("c", WALL)])
    board.note_registry({"a": WALL, "b": WALL, "c": WALL}, WALL)
    assert board.unreachable_peers(WALL) == []
    outage = WALL + STALE_SECONDS + 1
    board.peers = ()  # as the publish loop leaves it when Redis fails
    assert board.unreachable_peers(outage) == ["b", "c"]
    # The up gauge still judges no peer: a Redis outage is not replicas down.
    assert board.replica_states(outage) == [("a", True)]
    assert board.unreachable_peers(WALL + MISSING_MEMORY_SECONDS + 1) == []


def test_a_view_whose_only_peer_is_down_is_this_replica_naming_the_peer_missing() -> None:
    """It was no view at all: queue/ of two replicas, one killed, looked like a lone one."""
    board = ReplicaBoard("a")
    board.accept([encoded("b", WALL), encoded("c", WALL)])
    board.note_registry({"a": WALL, "b": WALL, "c": WALL}, WALL)
    later = WALL + 10
    board.accept([None, encoded("c", later)])  # b was killed; c lives
    board.note_registry({"a": later, "b": WALL, "c": later}, later)
    both = board.view(snapshot(1000.0, []), later)
    assert both is not None and both.replicas == ("a", "c") and both.missing == ("b",)
    assert both.header()["missing"] == ["b"]
    board.accept([None, None])  # c too
    alone = board.view(snapshot(1000.0, []), later)
    assert alone is not None and alone.replicas == ("a",) and alone.missing == ("b", "c")
    assert alone.header()["note"] == ""


def test_a_peer_whose_clock_is_behind_is_fresh_by_the_age_redis_gives_its_summary(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Judged by its own clock, a peer 5 s behind was down for good: never listed, paged."""
    board = ReplicaBoard("a")
    board.accept([encoded("b", WALL - 5.0), encoded("c", WALL + 0.3)], [0.2, 0.1], WALL)
    assert [p.replica for p in board.fresh_peers(WALL)] == ["b", "c"]
    assert board.skew("b") == pytest.approx(-4.8) and board.skew("c") == pytest.approx(0.4)
    assert board.skew("unknown") == 0.0
    view = board.view(snapshot(1000.0, []), WALL)
    assert view is not None and view.peers_max_age == pytest.approx(0.2)
    assert "replica b's clock is 4.8 s behind this one's" in caplog.text
    assert "replica c's clock" not in caplog.text
    # Without an age (an expired key read in passing) its own clock is all there is.
    board.accept([encoded("b", WALL - 5.0)], [None], WALL)
    assert board.fresh_peers(WALL) == ()


def test_a_peer_redis_forgot_when_it_lost_its_data_is_still_reported_down() -> None:
    """Killed around a Redis restart, it passed for one that withdrew: never named missing."""
    board = ReplicaBoard("a")
    board.accept([encoded("b", WALL), encoded("c", WALL)])
    board.note_epoch("1", ["a", "b", "c"])
    board.note_registry({"a": WALL, "b": WALL, "c": WALL}, WALL)
    later = WALL + 2
    board.accept([encoded("c", later)])  # Redis came back empty; c registered again, b did not
    board.note_epoch("2", ["a", "c"])
    board.note_registry({"a": later, "c": later}, later)
    assert board.replica_states(later) == [("a", True), ("b", False), ("c", True)]
    assert board.unreachable_peers(later) == ["b"]
    # Once it registers again it is up, and may withdraw like any other.
    board.accept([encoded("b", later + 1), encoded("c", later + 1)])
    board.note_epoch("2", ["a", "b", "c"])
    board.note_registry({"a": later + 1, "b": later + 1, "c": later + 1}, later + 1)
    assert board.replica_states(later + 1) == [("a", True), ("b", True), ("c", True)]
    board.accept([])  # b and c withdrew
    board.note_registry({"a": later + 2}, later + 2)
    assert board.replica_states(later + 2) == [("a", True)]


def test_a_peer_forgotten_by_the_registry_takes_its_clock_readings_along() -> None:
    # Each restart of a peer is a new ID: its readings piled up for good.
    board = ReplicaBoard("a")
    for n in range(5):
        board._note_skew(f"b-{n}", 0.5)
        board.accept([encoded(f"b-{n}", WALL + n)])
        board.note_registry({"a": WALL + n, f"b-{n}": WALL + n}, WALL + n)
        board.accept([])
        board.note_registry({"a": WALL + n + 2}, WALL + n + 2)  # b-n withdrew
    assert board.skew("b-4") == 0.0 and board._skew_samples == {}
    board._note_skew("c", 0.5)
    board.note_registry({"a": WALL + 9, "c": WALL + 9}, WALL + 9)
    assert board.skew("c") == 0.5  # a live peer keeps its own
