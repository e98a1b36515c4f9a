"""Which applied migrations a newer version made: those past every one this code has."""

from __future__ import annotations

from typing import Any

import pytest

from api.store import schema_state


def loader_with(disk: list[str], applied: list[str]) -> type:
    class Loader:
        def __init__(self, connection: Any) -> None:
            self.disk_migrations = {tuple(name.split(".")): None for name in disk}
            self.applied_migrations = {tuple(name.split(".")): None for name in applied}

    return Loader


def test_migrations_past_the_codes_newest_are_a_newer_versions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    disk = ["api.0001_initial", "api.0002_more", "auth.0012_alter"]
    applied = [*disk, "api.0003_newer", "api.0010_much_newer"]
    monkeypatch.setattr(schema_state, "MigrationLoader", loader_with(disk, applied))
    assert schema_state.unknown_migrations() == ["api.0003_newer", "api.0010_much_newer"]


def test_the_old_migrations_a_finished_squash_replaced_are_not_ahead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Its old files deleted, as Django's docs say to once every database ran it.
    disk = ["api.0001_squashed_0005_revision_tenants"]
    old = [
        "api.0001_initial",
        "api.0002_a",
        "api.0003_b",
        "api.0004_c",
        "api.0005_revision_tenants",
    ]
    monkeypatch.setattr(schema_state, "MigrationLoader", loader_with(disk, [*old, *disk]))
    assert schema_state.unknown_migrations() == []
    newer = [*old, *disk, "api.0006_newer"]
    monkeypatch.setattr(schema_state, "MigrationLoader", loader_with(disk, newer))
    assert schema_state.unknown_migrations() == ["api.0006_newer"]
