"""Process helpers for the tests that kill servers: who is alive, who descends from whom.

Read from /proc (Linux), so a zombie, which no longer runs and holds no
memory, counts as gone: in a container whose PID 1 does not reap, a killed
orphan stays a zombie for good.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ctrl_c_as_from_a_terminal", "descendants", "process_alive"]


def ctrl_c_as_from_a_terminal(command: list[str]) -> list[str]:
    """`command`, run so that it takes Ctrl-C (SIGINT) as a terminal's command does.

    A shell starts a background job with SIGINT ignored and its children
    inherit that (`make test &`): Python then installs no handler, so a test
    that stops a command with SIGINT waited for nothing (exit 0 instead of
    130; loadgen never stopped). `env --default-signal` resets it and execs
    the command, which keeps env's pid.

    Not a preexec_fn: one makes subprocess fork() instead of vfork(), and a
    fork() while gRPC's threads run (in any test process that has used a gRPC
    client) runs gRPC's fork handlers, which crashed the child before its exec
    with SIGABRT ("Epoll1Poller ... epoll_wait error: Bad file descriptor") or
    SIGSEGV: about one start in six in a loop, a rare loadgen failure in CI.
    """
    return ["env", "--default-signal=INT", *command]


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: split after the last ')'.
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def process_alive(pid: int) -> bool:
    """Whether the process exists and is not a zombie."""
    found = _stat(pid)
    return found is not None and found[0] not in ("Z", "X")


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (children, grandchildren, ...)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        found = _stat(int(entry))
        if found is not None and found[0] not in ("Z", "X"):
            children.setdefault(found[1], []).append(int(entry))
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return sorted(out)
