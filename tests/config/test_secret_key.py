"""Without `SECRET_KEY`, one random key kept in `VAR_DIR`, never a key in the source."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config import secret_key
from config.secret_key import FILE_NAME, kept_secret_key
from tests.config.test_settings_refusals import assert_refused_in_one_line, start


def test_the_first_start_makes_a_key_only_its_owner_reads_and_later_starts_read_it(
    tmp_path: Path,
) -> None:
    key = kept_secret_key(tmp_path)
    assert len(key) >= 50
    assert stat.S_IMODE((tmp_path / FILE_NAME).stat().st_mode) == 0o600
    assert kept_secret_key(tmp_path) == key
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILE_NAME]  # no draft left


def test_two_folders_get_different_keys(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert kept_secret_key(tmp_path / "a") != kept_secret_key(tmp_path / "b")


def test_a_process_that_loses_the_race_to_make_the_key_takes_the_winners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    winner = "w" * 60
    real_link = os.link

    def another_process_first(source: Path, target: Path) -> None:
        Path(target).write_text(winner)  # made between our look and our link
        real_link(source, target)

    monkeypatch.setattr(secret_key.os, "link", another_process_first)
    assert kept_secret_key(tmp_path) == winner
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILE_NAME]


def test_a_kept_key_too_short_to_sign_with_is_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_text("short\n")
    with pytest.raises(ImproperlyConfigured, match=f"{FILE_NAME}' holds no usable key"):
        kept_secret_key(tmp_path)


def test_a_folder_the_key_cannot_be_kept_in_is_refused_asking_for_secret_key(
    tmp_path: Path,
) -> None:
    (tmp_path / FILE_NAME).mkdir()  # there, but not a file that can be read
    with pytest.raises(ImproperlyConfigured, match="^SECRET_KEY is not set .* set SECRET_KEY$"):
        kept_secret_key(tmp_path)


def test_unset_the_server_signs_with_the_kept_key_and_prints_no_warning(tmp_path: Path) -> None:
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    args = ["manage.py", "shell", "--no-imports", "-c", code]
    first = start(args, {"SECRET_KEY": ""}, tmp_path)
    again = start(args, {"SECRET_KEY": ""}, tmp_path)
    assert first.returncode == 0 and not first.stderr, first.stderr
    assert first.stdout == again.stdout
    assert first.stdout.strip() == (tmp_path / "var" / FILE_NAME).read_text()
    assert "insecure" not in first.stdout
    given = start(args, {"SECRET_KEY": "s" * 50}, tmp_path)
    assert given.stdout.strip() == "s" * 50


def test_a_kept_key_that_cannot_be_read_stops_start_up_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / FILE_NAME).write_text("x")
    result = start(["manage.py", "check"], {"SECRET_KEY": ""}, tmp_path)
    assert_refused_in_one_line(result, repr(str(tmp_path / "var" / FILE_NAME)))
