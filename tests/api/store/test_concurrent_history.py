"""Many config writers at once on SQLite (a file, as deployed): the history stays whole.

PostgreSQL's run of the same script is in test_postgres.py.
"""

from __future__ import annotations

from pathlib import Path

from tests.api.store.history_race import mixed_writers_outcome


def test_many_writers_on_sqlite_leave_a_gap_free_history_the_store_matches(
    tmp_path: Path,
) -> None:
    outcome = mixed_writers_outcome(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    assert outcome["writes"] > 0 and outcome["refused"] > 0, outcome
    assert outcome == {**outcome, "gap_free": True, "config_version_is_the_last": True}
    assert outcome["broken_links"] == []
    assert outcome["replayed_is_stored"] and outcome["versions_are_last_changes"]
