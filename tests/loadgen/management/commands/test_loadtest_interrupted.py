"""`manage.py loadtest` stopped part way leaves no server behind and says how far it got.

SIGTERM reaches only the command (a process manager, `kill`); Ctrl-C in a
terminal reaches its whole process group, the Daphne it started included.
Either way that Daphne is gone and its temporary folder removed when the
command exits, which says how many phases finished and exits 130.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadgen.daphne_process import BASE_DIR
from tests.processes import ctrl_c_as_from_a_terminal, process_alive

DEADLINE = 60.0
# Into the first phase: its clients connected, its 1 s warm-up over, sending.
SENDING = 2.5


@contextlib.contextmanager
def loadtest_running(*args: str) -> Iterator[subprocess.Popen[str]]:
    """`manage.py loadtest ARGS` in a process group of its own and taking
    Ctrl-C (as a terminal gives a command), its output piped; the group killed
    if a check failed."""
    loadtest = subprocess.Popen(
        ctrl_c_as_from_a_terminal([sys.executable, str(BASE_DIR / "manage.py"), "loadtest", *args]),
        cwd=BASE_DIR, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        yield loadtest
    finally:
        if loadtest.poll() is None:
            os.killpg(loadtest.pid, signal.SIGKILL)
            loadtest.wait()


def daphne_folder(pid: int) -> Path:
    """The temporary folder DaphneProcess made for the server `pid` (its VAR_DIR's parent)."""
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    [var_dir] = [entry[len(b"VAR_DIR=") :] for entry in environ if entry.startswith(b"VAR_DIR=")]
    return Path(os.fsdecode(var_dir)).parent


@pytest.mark.parametrize("ctrl_c", [False, True], ids=["sigterm", "ctrl-c"])
def test_an_interrupted_loadtest_stops_its_server_and_says_how_many_phases_ran(
    ctrl_c: bool,
) -> None:
    # Phases as short as the command takes (each still warms up for 1 s): the
    # test needs one to finish, not a measurement.
    with loadtest_running(
        "--queriers", "1", "--frontends", "1", "--window", "2", "--seconds", "0.1"
    ) as loadtest:
        assert loadtest.stdout is not None
        deadline = time.monotonic() + DEADLINE
        daphne = 0
        while not (line := loadtest.stdout.readline()).startswith("phase relay-no-ack"):
            assert line and time.monotonic() < deadline, "loadtest ended before its second phase"
            if line.startswith("Daphne pid "):
                daphne = int(line.split()[2])
                folder = daphne_folder(daphne)
        assert daphne and process_alive(daphne)
        if ctrl_c:
            os.killpg(loadtest.pid, signal.SIGINT)
        else:
            loadtest.send_signal(signal.SIGTERM)
        _, stderr = loadtest.communicate(timeout=DEADLINE)
    assert loadtest.returncode == 130
    assert stderr.splitlines()[-1] == (
        "CommandError: loadtest: interrupted after 1 of 7 phases; "
        "the server it started is stopped; no summary"
    )
    assert "Traceback" not in stderr
    assert not process_alive(daphne)
    assert not folder.exists()


def test_a_loadtest_interrupted_while_it_sends_says_so_in_one_line_and_no_task_traceback() -> None:
    # `kill -INT PID` mid-phase, while its clients send flat out: the signal
    # lands inside one of their tasks, not between the loop's steps.
    with loadtest_running(
        "--queriers",
        "10",
        "--frontends",
        "10",
        "--window",
        "20",
        "--seconds",
        "5",
    ) as loadtest:
        assert loadtest.stdout is not None
        deadline = time.monotonic() + DEADLINE
        while not (line := loadtest.stdout.readline()).startswith("phase relay:"):
            assert line and time.monotonic() < deadline, "loadtest ended before its first phase"
        time.sleep(SENDING)
        loadtest.send_signal(signal.SIGINT)
        _, stderr = loadtest.communicate(timeout=DEADLINE)
    assert loadtest.returncode == 130
    # Before: "ERROR asyncio: Task exception was never retrieved" and a
    # KeyboardInterrupt traceback followed the one line.
    assert stderr.splitlines()[-1] == (
        "CommandError: loadtest: interrupted after 0 of 7 phases; "
        "the server it started is stopped; no summary"
    )
    assert "Traceback" not in stderr
    assert "asyncio" not in stderr
