"""The replica board: which peers' summaries it keeps, and which replicas it reports.

Fed raw Redis values by hand, no Redis: it skips itself, bad entries and
stale peers, and tells a crashed replica (reported down) from one that
withdrew gracefully.
"""

from __future__ import annotations

import json

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
