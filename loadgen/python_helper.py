"""`DaphneProcess.run_python`'s child: Django set up once, then one code string per call.

A `manage.py shell -c` process costs a second of start-up and the tests
call `run_python` hundreds of times, so each server keeps one of these
(`python -m loadgen.python_helper`, with the server's environment). The
parent sends each code string as a frame on the child's stdin and reads
the answer from its stdout: a frame is its length (4 bytes, big-endian)
and then that much UTF-8 JSON, so any code or output text passes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import select
import struct
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import django
from django.db import connections

__all__ = ["CALL_TIMEOUT", "PythonDied", "PythonProcess", "tail"]

BASE_DIR = Path(__file__).resolve().parent.parent
# As long as `manage()` gives a command: a call that takes longer has hung.
CALL_TIMEOUT = 120.0
_LENGTH = struct.Struct(">I")


class PythonDied(Exception):
    """`run_python`'s process exited, hung or broke the protocol during a call."""


class PythonProcess:
    """The child running `_serve`: Django set up once, then one code string per frame."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env = env
        self.log_path = log_path
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "loadgen.python_helper"],
                env=env,
                cwd=BASE_DIR,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
            )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, code: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        deadline = time.monotonic() + CALL_TIMEOUT
        fd = self.proc.stdout.fileno()

        def read(size: int) -> bytes:
            # Straight from the pipe (never its buffer), so select sees every unread byte.
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise TimeoutError(f"no answer in {CALL_TIMEOUT:.0f} s")
            return os.read(fd, size)

        try:
            _write_frame(self.proc.stdin, {"code": code})
            reply = _read_frame(read)
        except (OSError, TimeoutError, ValueError) as exc:
            raise PythonDied(f"{type(exc).__name__}: {exc}\n{tail(self.log_path)}") from exc
        if reply is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)
            raise PythonDied(f"exit code {self.proc.returncode}:\n{tail(self.log_path)}")
        if reply["error"] is not None:
            raise RuntimeError(f"run_python failed:\n{reply['error']}")
        return str(reply["stdout"])

    def stop(self) -> None:
        """Its stdin closed, it leaves after the code it runs; killed if it lingers."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.proc.stdout.close()


def tail(path: Path) -> str:
    """The end of a log file (its last 5,000 characters), "" if it cannot be read."""
    try:
        return path.read_text(errors="replace")[-5000:]
    except OSError:
        return ""


def _write_frame(stream: Any, message: dict[str, Any]) -> None:
    data = json.dumps(message).encode()
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def _read_frame(read: Callable[[int], bytes]) -> dict[str, Any] | None:
    """The next message from `read` (up to n bytes, b"" at the end), or None at the end."""
    header = _read_exactly(read, _LENGTH.size)
    if not header:
        return None
    size = _LENGTH.unpack(header)[0] if len(header) == _LENGTH.size else -1
    body = _read_exactly(read, size) if size >= 0 else b""
    if len(body) != size:
        raise ValueError("the stream ended inside a frame")
    message: dict[str, Any] = json.loads(body)
    return message


def _read_exactly(read: Callable[[int], bytes], size: int) -> bytes:
    """`size` bytes, or fewer where the stream ends."""
    data = bytearray()
    while len(data) < size and (chunk := read(size - len(data))):
        data += chunk
    return bytes(data)


def _serve() -> None:
    """`run_python`'s process: run each code string sent on stdin, until stdin closes.

    The frames keep fds 0 and 1 to themselves: what the code (or anything
    below Python) writes to fd 1 goes to stderr (the log), and it reads
    stdin as /dev/null.
    """
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    django.setup()
    while (request := _read_frame(requests.read)) is not None:
        _write_frame(replies, _execute(str(request["code"])))


def _execute(code: str) -> dict[str, str | None]:
    """Run `code` as `manage.py shell -c` would: its stdout, and its error if it fails."""
    stdout, stderr = io.StringIO(), io.StringIO()
    failure: str | None = None
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                # Not this module's `from __future__` flags: the code runs as written.
                exec(compile(code, "<string>", "exec", dont_inherit=True), {})
            finally:
                # Autocommit wrote each change already; closing lets the
                # database go (SQLite's file, a PostgreSQL database to drop).
                connections.close_all()
    except SystemExit as exc:
        if exc.code not in (None, 0):
            failure = traceback.format_exc()
    except Exception:
        failure = traceback.format_exc()
    return {
        "stdout": stdout.getvalue(),
        "error": None if failure is None else stderr.getvalue() + failure,
    }


if __name__ == "__main__":
    _serve()
