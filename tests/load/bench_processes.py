"""Child processes, `manage.py` runs and the few HTTP and /proc reads the benchmarks need.

Children start in process groups of their own, so a stop takes whatever
they started too (Cortex's and Daphne's workers); CPU is read from /proc as
utime + stime, per process group or per thread, and memory as VmRSS and
VmHWM per process group. Only the standard library.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from loadgen.daphne_process import free_port

__all__ = [
    "Processes",
    "free_port",
    "gauge",
    "group_cpu_seconds",
    "group_memory_bytes",
    "http_get",
    "http_ok",
    "manage",
    "project_python",
    "thread_cpu_seconds",
    "wait_until",
]

CLOCK_TICK = os.sysconf("SC_CLK_TCK")
LOGS: dict[int, Path] = {}  # pid -> the file its output goes to


class Processes:
    """Children started in their own process groups, all stopped on close."""

    def __init__(self) -> None:
        self.running: list[subprocess.Popen[bytes]] = []

    def start(
        self,
        argv: list[str],
        log: Path,
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        with log.open("ab") as out:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.running.append(proc)
        LOGS[proc.pid] = log
        return proc

    def stop(self, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
        """SIGTERM to the group, SIGKILL after `timeout` seconds."""
        if proc in self.running:
            self.running.remove(proc)
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # anything left in the group

    def close(self) -> None:
        for proc in reversed(list(self.running)):
            self.stop(proc)


def _group_members(pgid: int) -> list[tuple[Path, list[str]]]:
    """Each live process of the process group: its /proc directory and stat fields."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[2]) == pgid:
            members.append((entry, fields))
    return members


def group_cpu_seconds(pgid: int) -> float:
    """utime + stime of every live process in the process group."""
    ticks = sum(int(fields[11]) + int(fields[12]) for _, fields in _group_members(pgid))
    return ticks / CLOCK_TICK


def group_memory_bytes(pgid: int) -> tuple[int, int]:
    """Resident memory of the process group now, and the sum of its processes' peaks.

    VmRSS and VmHWM from /proc/<pid>/status, summed over the group's live
    processes (a process that already exited is not counted).
    """
    rss = peak = 0
    for entry, _ in _group_members(pgid):
        with contextlib.suppress(OSError):
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss += int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    peak += int(line.split()[1]) * 1024
    return rss, peak


def thread_cpu_seconds(pid: int) -> dict[int, tuple[str, float]]:
    """Per thread of `pid`: its name (comm) and utime + stime."""
    threads = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            stat = (task / "stat").read_text()
            fields = stat[stat.rfind(")") + 2 :].split()
            name = stat[stat.find("(") + 1 : stat.rfind(")")]
            threads[int(task.name)] = (name, (int(fields[11]) + int(fields[12])) / CLOCK_TICK)
    return threads


def project_python(project: Path) -> str:
    """The checkout's own interpreter (its `.venv`), else this one."""
    python = project / ".venv" / "bin" / "python"
    return str(python if python.exists() else Path(sys.executable))


def manage(python: str, code: Path, env: dict[str, str], *command: str) -> str:
    """`manage.py COMMAND` of the checkout `code`, run by `python`; its standard
    output. Its errors go to the bench's own, where a failed set-up is read."""
    done = subprocess.run(
        [python, "manage.py", *command],
        cwd=code,
        env=env,
        check=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    return done.stdout


def http_get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def wait_until(
    what: str, check: Callable[[], bool], proc: subprocess.Popen[bytes], timeout: float
) -> None:
    """Polls `check()` until true; fails if `proc` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what}: exited with {proc.returncode}{_log_tail(proc)}")
        with contextlib.suppress(OSError, ValueError):
            if check():
                return
        time.sleep(0.25)
    raise RuntimeError(f"{what}: not ready after {timeout:.0f}s{_log_tail(proc)}")


def _log_tail(proc: subprocess.Popen[bytes], lines: int = 20) -> str:
    log = LOGS.get(proc.pid)
    if log is None or not log.exists():
        return ""
    tail = log.read_text(errors="replace").splitlines()[-lines:]
    return f"; last lines of {log.name}:\n" + "\n".join(tail)


def http_ok(url: str) -> bool:
    return http_get(url)[0] == 200


def gauge(text: str, name: str) -> float:
    match = re.search(rf"^{name}(?:\{{[^}}]*\}})? ([0-9.e+]+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0
