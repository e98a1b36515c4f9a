"""The running event loop, found without a system call.

`asyncio.get_running_loop()` calls `getpid()` every time (CPython checks
that the loop was not inherited across a fork), and glibc no longer caches
the pid, so each call is a system call: on this project's hot paths (a
future per dispatched request, a task per querier reply) that was about 4%
of the gRPC door's busy time in a py-spy profile (docs/performance.md).

`running_loop` reads the loop from this thread's async-generator hooks
instead. Both asyncio's loops and uvloop's install their own bound
`_asyncgen_firstiter_hook` with `sys.set_asyncgen_hooks` as they start
running, in the thread that runs them, and put the previous hooks back as
they stop; no user code runs between either step and the loop's own
`_set_running_loop`. So while the hook is bound to a loop, that loop is the
one running in this thread. When it is not (no loop, or code that installed
hooks of its own), asyncio is asked. A child process forked from a running
loop inherits the hooks, so after a fork asyncio is always asked, as its
pid check requires.

An earlier version cached the last loop and checked its `_thread_id`,
which uvloop's loops do not have: with uvloop the default (session 21) every
call fell through to `getpid()` again, 3.5% of the door's busy samples.

Imports: asyncio, os and sys only.
"""

from __future__ import annotations

import asyncio
import os
import sys

__all__ = ["running_loop"]

_forked = False


def _after_fork() -> None:
    global _forked
    _forked = True


os.register_at_fork(after_in_child=_after_fork)


def running_loop() -> asyncio.AbstractEventLoop:
    """The loop running in this thread (RuntimeError when none is), as asyncio's."""
    if not _forked:
        owner = getattr(sys.get_asyncgen_hooks().firstiter, "__self__", None)
        if isinstance(owner, asyncio.AbstractEventLoop):
            return owner
    return asyncio.get_running_loop()
