"""`at_one_version`: a body read across statements comes with the version it was read at."""

from __future__ import annotations

from api.store.one_version import ATTEMPTS, at_one_version


class MovingStore:
    """A version that moves once for each write queued to land during a read."""

    def __init__(self, writes_during_reads: int) -> None:
        self.version = 1
        self.writes = writes_during_reads
        self.reads = 0

    def read(self) -> int:
        self.reads += 1
        body = self.version
        if self.writes:
            self.writes -= 1
            self.version += 1  # a write commits after the body was read
        return body


def test_a_quiet_store_is_read_once_at_its_version() -> None:
    store = MovingStore(0)
    assert at_one_version(lambda: store.version, store.read) == (1, 1)
    assert store.reads == 1


def test_a_write_landing_during_the_read_is_read_again_with_its_version() -> None:
    store = MovingStore(2)
    assert at_one_version(lambda: store.version, store.read) == (3, 3)
    assert store.reads == 3


def test_a_store_that_never_settles_answers_a_version_no_newer_than_its_body() -> None:
    store = MovingStore(10 * ATTEMPTS)
    version, body = at_one_version(lambda: store.version, store.read)
    assert version <= body
    assert store.reads == ATTEMPTS + 1
