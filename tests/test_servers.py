"""tests/servers.py's way of starting a server: it dies with pytest, and starting
it is safe in a test process whose gRPC threads are busy."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from tests.servers import _dying_with_parent

PDEATHSIG = [
    sys.executable, "-c",
    "import ctypes, signal; got = ctypes.c_int(); "
    "ctypes.CDLL(None).prctl(2, ctypes.byref(got)); print(signal.Signals(got.value).name)",
]  # fmt: skip


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_a_server_is_told_to_stop_with_its_signal_when_pytest_dies() -> None:
    told = subprocess.run(
        _dying_with_parent(PDEATHSIG, signal.SIGINT), capture_output=True, text=True, check=True
    )
    assert told.stdout == "SIGINT\n"


@pytest.mark.usefixtures("busy_grpc")
def test_servers_started_while_grpc_threads_are_busy_all_start() -> None:
    # With the preexec_fn it had (fork() then gRPC's fork handlers), a Redis
    # a test started died before its exec with SIGABRT in CI.
    failed = []
    for _ in range(200):
        child = subprocess.run(
            _dying_with_parent(["true"], signal.SIGTERM),
            capture_output=True,
            check=False,
            process_group=0,
        )
        if child.returncode != 0:
            failed.append((child.returncode, child.stderr[-200:]))
    assert failed == []
