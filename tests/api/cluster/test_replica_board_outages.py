"""The replica board through Redis outages: which peers it reports, and their clocks.

Found by stopping, hanging and restarting the Redis of three live replicas:
each outage's start and end flipped every peer's up gauge to 0 for a few
seconds, and a hung Redis running a write late read as a peer's clock far
behind. Fed by hand on a fake wall clock, no Redis.
"""

from __future__ import annotations

import pytest

from api.cluster.replica_board import PUBLISH_SECONDS, STALE_SECONDS, ReplicaBoard
from tests.api.cluster.replica_summaries import WALL, encoded, snapshot


def _round(board: ReplicaBoard, at: float, publishing: list[str]) -> None:
    """One pass of the publish loop at `at`: `publishing` peers' summaries, fresh by
    Redis, and the registry holding them."""
    board.accept([encoded(r, at) for r in publishing], [0.0] * len(publishing), at)
    board.note_registry({r: at for r in ["a", *publishing]}, at)


def _three_replicas_up() -> ReplicaBoard:
    board = ReplicaBoard("a")
    board.note_epoch("1", ["a", "b", "c"])
    _round(board, WALL, ["b", "c"])
    assert board.replica_states(WALL) == [("a", True), ("b", True), ("c", True)]
    return board


def test_redis_failing_reports_no_peer_down_and_names_every_peer_missing() -> None:
    """The registry read just before still judged peers: all down for STALE_SECONDS."""
    board = _three_replicas_up()
    board.lost_redis()
    for moment in (WALL + PUBLISH_SECONDS, WALL + STALE_SECONDS / 2, WALL + 10):
        assert board.replica_states(moment) == [("a", True)]
        assert board.unreachable_peers(moment) == ["b", "c"]
    view = board.view(snapshot(1000.0, []), WALL + 1)
    assert view is not None and view.replicas == ("a",) and view.missing == ("b", "c")


def test_peers_have_a_staleness_window_to_publish_after_redis_comes_back_empty() -> None:
    """The first replica back reported the others down until they had published."""
    board = _three_replicas_up()
    board.lost_redis()
    back = WALL + 30
    board.accept([], [], back)  # Redis restarted empty: no peer has published yet
    board.note_epoch("2", ["a"])
    board.note_registry({"a": back}, back)
    assert board.replica_states(back) == [("a", True)]
    assert board.unreachable_peers(back) == ["b", "c"]
    # c publishes again: up at once; b, not back yet, is still not judged.
    _round(board, back + PUBLISH_SECONDS, ["c"])
    assert board.replica_states(back + PUBLISH_SECONDS) == [("a", True), ("c", True)]
    assert board.unreachable_peers(back + PUBLISH_SECONDS) == ["b"]
    # Given its window and still silent, b did not withdraw (Redis forgot it): down.
    late = back + STALE_SECONDS + PUBLISH_SECONDS
    _round(board, late, ["c"])
    assert board.replica_states(late) == [("a", True), ("b", False), ("c", True)]
    assert board.unreachable_peers(late) == ["b"]


def test_the_first_registry_read_judges_peers_at_once() -> None:
    """A replica starting beside a crashed peer names it down without waiting."""
    board = ReplicaBoard("a")
    board.accept([encoded("c", WALL)], [0.0], WALL)
    board.note_registry({"a": WALL, "b": WALL - 30, "c": WALL}, WALL)
    assert board.replica_states(WALL) == [("a", True), ("b", False), ("c", True)]


def test_a_summary_redis_wrote_late_is_neither_a_clock_behind_nor_fresh(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A hung Redis ran a write queued 17.9 s before: "replica b's clock is 17.9 s
    behind" was logged, and b's 17.9 s old numbers were shown as current."""
    board = ReplicaBoard("a")
    for i in range(4):
        at = WALL + i * PUBLISH_SECONDS
        board.accept([encoded("b", at + 0.2)], [0.01], at)  # b's clock 0.21 s ahead
    assert board.skew("b") == pytest.approx(0.21)
    resumed = WALL + 30
    board.accept([encoded("b", resumed - 17.9)], [0.0], resumed)
    assert board.skew("b") == pytest.approx(0.21)
    assert "clock" not in caplog.text
    assert board.fresh_peers(resumed) == ()
    board.accept([encoded("b", resumed + 0.7)], [0.0], resumed + 0.5)
    assert [p.replica for p in board.fresh_peers(resumed + 0.5)] == ["b"]


def test_a_peer_clock_that_steps_is_followed_within_a_few_publishes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Only ever the largest reading: a clock set back must still be noticed."""
    board = ReplicaBoard("a")
    at = WALL
    for _ in range(20):
        at += PUBLISH_SECONDS
        board.accept([encoded("b", at - 4.0)], [0.0], at)
    assert board.skew("b") == pytest.approx(-4.0)
    assert "replica b's clock is 4.0 s behind this one's" in caplog.text
    assert [p.replica for p in board.fresh_peers(at)] == ["b"]
