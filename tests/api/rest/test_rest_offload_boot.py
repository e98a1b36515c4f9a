"""The import worker's guards against outliving its parent (api/rest/offload_boot.py).

Each test runs a parent process that starts a child which arms one guard,
then kills the parent with SIGKILL (no cleanup runs) and waits, bounded,
for the child to be gone. Either guard alone must be enough.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from api.rest import offload_boot
from tests.processes import process_alive

BASE_DIR = Path(__file__).resolve().parents[3]

CHILD = """
import os, sys, threading, time
sys.path.insert(0, {base!r})
from api.rest import offload_boot
mode = {mode!r}
parent = os.getppid()
if mode == "signal":
    assert offload_boot.parent_death_signal()
elif mode == "watchdog":
    threading.Thread(
        target=offload_boot._watch_parent, args=(parent, 0.05), daemon=True
    ).start()
else:
    offload_boot.exit_with_parent(parent, 0.05)
print("armed", flush=True)
time.sleep(120)
"""

PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1]])
print(child.pid, flush=True)
time.sleep(120)
"""


def _orphan_after_parent_killed(
    mode: str, while_armed: Callable[[int], None] = lambda pid: None
) -> int:
    """The child's pid, after its parent was SIGKILLed once the child was armed
    (and `while_armed` had looked at the child, given its pid)."""
    code = CHILD.format(base=str(BASE_DIR), mode=mode)
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, code], stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert parent.stdout.readline().strip() == "armed"
        assert process_alive(child)
        while_armed(child)
    finally:
        parent.kill()
        parent.wait(10)
    return child


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while process_alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)  # leave nothing behind either way
            return False
        time.sleep(0.02)
    return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux only")
def test_the_parent_death_signal_alone_ends_the_child() -> None:
    assert _gone_within(_orphan_after_parent_killed("signal"), 10.0)


def test_the_watchdog_alone_ends_the_child_once_it_is_re_parented() -> None:
    assert _gone_within(_orphan_after_parent_killed("watchdog"), 10.0)


def test_both_guards_armed_together_end_the_child() -> None:
    assert _gone_within(_orphan_after_parent_killed("both"), 10.0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_an_armed_worker_leaves_a_ctrl_c_to_its_parent() -> None:
    # A terminal's Ctrl-C reaches the whole process group: each worker printed
    # a KeyboardInterrupt traceback while `make demo` shut down cleanly.
    def ignores_sigint(pid: int) -> None:
        status = Path(f"/proc/{pid}/status").read_text()
        mask = next(line for line in status.splitlines() if line.startswith("SigIgn:"))
        assert int(mask.split()[1], 16) & (1 << (signal.SIGINT - 1))

    assert _gone_within(_orphan_after_parent_killed("both", ignores_sigint), 10.0)


def test_a_child_whose_parent_is_already_gone_exits_at_once(monkeypatch) -> None:
    exits: list[int] = []

    def fake_exit(code: int) -> None:
        exits.append(code)
        raise SystemExit(code)

    monkeypatch.setattr(offload_boot.os, "_exit", fake_exit)
    # Never arm the real signal, nor ignore Ctrl-C, in the test process itself.
    monkeypatch.setattr(offload_boot, "parent_death_signal", lambda sig=0: True)
    monkeypatch.setattr(offload_boot.signal, "signal", lambda *args: None)
    with pytest.raises(SystemExit):
        offload_boot.exit_with_parent(os.getppid() + 1_000_000)
    assert exits == [1]
