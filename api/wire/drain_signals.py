"""SIGTERM and SIGINT: drain the scheduler first, then exit as the server would have.

Daphne's Twisted reactor owns both signals. `SignalDrain.install` takes
them on the event loop (main thread only: elsewhere, or on a loop that
cannot, the server exits on them as before, without a drain) and keeps the
previous handlers. The first signal runs the drain, then gives them back and
raises the same signal again, so the reactor shuts down as usual once every
request was answered and every socket closed. A signal heard during the
drain is logged and ignored: handed to the reactor, a second SIGTERM (a
process manager repeating itself, a wrapper forwarding the group's signal)
ended the process mid-drain, its queue lost without a word to the frontends
and its summary never withdrawn. The drain is bounded by its timeout;
SIGKILL stops the process at once.

A signal nobody acts on once given back is not raised again: a server
started as a background job (`make demo`) inherits SIGINT ignored, so after
Ctrl-C's drain the raised SIGINT did nothing and the process hung, drained,
for ever. SIGTERM is raised instead when the server acts on it, else the
signal's default action ends the process.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["SignalDrain"]

log = logging.getLogger(__name__)


class SignalDrain:
    """Runs `drain(sig)` on SIGTERM or SIGINT, then re-raises the signal."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        drain: Callable[[signal.Signals], Awaitable[None]],
    ) -> None:
        self._loop = loop
        self._drain = drain
        self._previous: dict[signal.Signals, Any] = {}
        # The drain's task is kept here: the loop holds tasks only weakly.
        self._running: set[asyncio.Task[None]] = set()
        self._draining = False

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(sig)
            try:
                self._loop.add_signal_handler(sig, self._on_signal, sig)
            except (NotImplementedError, RuntimeError, ValueError):
                log.warning("cannot handle %s on this loop; no graceful drain", sig.name)
                continue
            self._previous[sig] = previous

    def restore(self) -> None:
        """Give the signals back to whoever had them (Daphne's Twisted reactor).

        During a drain this waits for its end: the drain itself (the host's
        stop) asks for it, and a signal must not reach the reactor before.
        """
        if self._draining:
            return
        for sig, previous in self._previous.items():
            self._loop.remove_signal_handler(sig)
            if previous is not None:
                signal.signal(sig, previous)
        self._previous.clear()

    def _ending_signal(self, sig: signal.Signals) -> signal.Signals | None:
        """What to raise once drained: `sig`, or SIGTERM, whichever someone acts
        on once given back; None when neither (then `sig`'s default action)."""
        for candidate in (sig, signal.SIGTERM):
            handler = self._previous.get(candidate, signal.getsignal(candidate))
            if handler not in (signal.SIG_IGN, None):
                return candidate
        return None

    def _on_signal(self, sig: signal.Signals) -> None:
        if self._draining:
            log.warning("%s again: already draining (SIGKILL stops at once)", sig.name)
            return
        self._draining = True

        async def drain_then_exit() -> None:
            ending = self._ending_signal(sig)
            try:
                await self._drain(sig)
            finally:
                self._draining = False
                self.restore()
                if ending is None:
                    signal.signal(sig, signal.SIG_DFL)
                signal.raise_signal(ending or sig)

        task = self._loop.create_task(drain_then_exit())
        self._running.add(task)
        task.add_done_callback(self._running.discard)
