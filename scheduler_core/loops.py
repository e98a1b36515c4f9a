"""The running event loop, found without a system call.

`asyncio.get_running_loop()` calls `getpid()` every time (CPython checks
that the loop was not inherited across a fork), and glibc no longer caches
the pid, so each call is a system call: on this project's hot paths (a
future per dispatched request, a task per querier reply) that was about 4%
of the gRPC door's busy time in a py-spy profile (docs/performance.md).
`running_loop` returns the loop it found last while that loop is running in
the calling thread, and asks asyncio otherwise.

Imports: asyncio and threading only.
"""

from __future__ import annotations

import asyncio
import threading

__all__ = ["running_loop"]

_last: asyncio.AbstractEventLoop | None = None


def running_loop() -> asyncio.AbstractEventLoop:
    """The loop running in this thread (RuntimeError when none is), as asyncio's.

    A loop that stopped, or runs in another thread, has another `_thread_id`
    (None once stopped), so the cached one is returned only while it is this
    thread's running loop. Loops without that attribute (uvloop) are looked
    up each time. Not for use in a child process forked from a running loop.
    """
    global _last
    loop = _last
    if loop is not None and getattr(loop, "_thread_id", None) == threading.get_ident():
        return loop
    loop = _last = asyncio.get_running_loop()
    return loop
