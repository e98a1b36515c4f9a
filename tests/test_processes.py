"""tests/processes.py's `ctrl_c_as_from_a_terminal`: the child takes Ctrl-C,
and starting it is safe in a test process whose gRPC threads are busy."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.processes import ctrl_c_as_from_a_terminal

SHOW_SIGINT = [
    sys.executable, "-c",
    "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)",
]  # fmt: skip


def test_a_command_started_from_a_shell_that_ignores_ctrl_c_takes_it_again() -> None:
    # As `make test &` starts pytest: SIGINT ignored, and inherited so.
    shell = ["sh", "-c", "trap '' INT; exec \"$@\"", "sh"]
    ignoring = subprocess.run(shell + SHOW_SIGINT, capture_output=True, text=True, check=True)
    taking = subprocess.run(
        shell + ctrl_c_as_from_a_terminal(SHOW_SIGINT), capture_output=True, text=True, check=True
    )
    assert (ignoring.stdout, taking.stdout) == ("False\n", "True\n")


@pytest.mark.usefixtures("busy_grpc")
def test_commands_started_while_grpc_threads_are_busy_all_start_and_exit_cleanly() -> None:
    # With a preexec_fn instead (fork() then gRPC's fork handlers) about one
    # start in six died before its exec, with SIGABRT or SIGSEGV.
    failed = []
    for _ in range(200):
        child = subprocess.run(
            ctrl_c_as_from_a_terminal(["true"]), capture_output=True, check=False
        )
        if child.returncode != 0:
            failed.append((child.returncode, child.stderr[-200:]))
    assert failed == []
