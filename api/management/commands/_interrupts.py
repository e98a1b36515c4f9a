"""Ctrl-C (and SIGTERM) held back while a command does what must not be cut in two.

An autocommitted INSERT that Ctrl-C interrupts still commits: SQLite (or
the server) finishes it, and Python raises KeyboardInterrupt only once the
driver returns, in the code after it. So `issue_token` stopped by Ctrl-C
while its INSERT waited on a locked database left a live token that was
never shown, and `loadgen` one it never revoked, as it had not yet noted
the token as its own. Inside `interrupts_deferred()` those signals are only
noted; when the block ends, its work done and recorded, the command stops
as Ctrl-C stops it (KeyboardInterrupt, which manage.py exits 130 on).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["interrupts_deferred"]

_STOPS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM wait for the block; then KeyboardInterrupt, if either came.

    A signal ignored (a background job's Ctrl-C) stays ignored. An exception
    from the block goes on as it is: the command stops with it anyway.
    """
    if threading.current_thread() is not threading.main_thread():
        # Only the main thread may set handlers, and only it runs them.
        yield
        return
    received: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    previous = {}
    for stop in _STOPS:
        handler = signal.getsignal(stop)
        # None: a handler set outside Python, which could not be put back.
        if handler is not None and handler != signal.SIG_IGN:
            previous[stop] = signal.signal(stop, note)
    try:
        yield
    finally:
        for stop, handler in previous.items():
            signal.signal(stop, handler)
    if received:
        raise KeyboardInterrupt
