"""The import worker process: replaced when it dies, used only when it can share the database."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.db import connection

from api.rest import dry_run, offload
from api.rest.offload import ImportWorker, ImportWorkerDied
from api.rest.offload_boot import WORKER_NICENESS


@pytest.fixture
def worker() -> Iterator[ImportWorker]:
    pool = ImportWorker(str(connection.settings_dict["NAME"]))
    try:
        yield pool
    finally:
        pool.close()


def _wait_reaped(pid: int, timeout: float = 20.0) -> None:
    """Until the pool has noticed the death and reaped the process."""
    deadline = time.monotonic() + timeout
    while os.path.exists(f"/proc/{pid}"):
        assert time.monotonic() < deadline, f"worker {pid} was never reaped"
        time.sleep(0.02)


def test_the_work_runs_in_another_process_that_is_kept_for_the_next_call(worker):
    first = worker.call(os.getpid)
    assert first != os.getpid()
    assert worker.call(os.getpid) == first


def test_the_worker_runs_at_a_lower_cpu_priority_than_the_server(worker):
    assert worker.call(os.nice, 0) == os.nice(0) + WORKER_NICENESS


def test_a_worker_dying_mid_call_is_a_503_and_the_next_call_gets_a_new_one(worker):
    before = worker.call(os.getpid)
    with pytest.raises(ImportWorkerDied) as died:
        worker.call(os._exit, 3)
    assert died.value.status_code == 503
    assert "GET runtime-config shows the current state" in str(died.value.detail)
    after = worker.call(os.getpid)
    assert after not in (before, os.getpid())


def test_a_worker_killed_while_idle_is_replaced_without_failing_the_next_call(worker):
    before = worker.call(os.getpid)
    os.kill(before, signal.SIGKILL)
    _wait_reaped(before)
    assert worker.call(os.getpid) not in (before, os.getpid())


def test_the_worker_is_off_for_an_in_memory_database_even_when_enabled(settings, db):
    settings.CONFIG_IMPORT_IN_WORKER_PROCESS = True
    assert connection.is_in_memory_db()
    assert offload.worker_enabled() is False


def test_the_setting_turns_the_worker_off(settings):
    settings.CONFIG_IMPORT_IN_WORKER_PROCESS = False
    assert offload.worker_enabled() is False


def _held_until(started: str, release: str) -> int:
    """In a worker: says it started, then holds the worker until `release` exists."""
    Path(started).touch()
    while not os.path.exists(release):
        time.sleep(0.01)
    return os.getpid()


def test_an_editors_import_does_not_wait_behind_a_viewers_dry_run(settings, tmp_path):
    settings.CONFIG_IMPORT_IN_WORKER_PROCESS = True
    started, release = tmp_path / "started", tmp_path / "release"
    try:
        with ThreadPoolExecutor(2) as threads:
            dry = threads.submit(dry_run.offloaded, _held_until, str(started), str(release))
            deadline = time.monotonic() + 60
            while not started.exists():
                assert time.monotonic() < deadline and not dry.done(), "the dry run never started"
                time.sleep(0.02)
            try:
                imported = threads.submit(offload.shared_worker().call, os.getpid)
                assert imported.result(timeout=60) != os.getpid()
                assert not dry.done()
            finally:
                release.touch()
            assert dry.result(timeout=60) not in (imported.result(), os.getpid())
    finally:
        for role in ("import", "dry-run"):
            offload.shared_worker(role).close()


def test_a_dry_run_worker_dying_says_that_a_dry_run_saved_nothing() -> None:
    worker = ImportWorker(str(connection.settings_dict["NAME"]), "dry-run")
    try:
        with pytest.raises(ImportWorkerDied) as died:
            worker.call(os._exit, 3)
    finally:
        worker.close()
    assert died.value.status_code == 503
    assert str(died.value.detail) == (
        "the dry-run worker process exited before it answered; a new one is "
        "started for the next dry run. A dry run saves nothing: try it again"
    )
