"""One log line per outage, not one per retry.

The loops that read the channel layer retry every second while Redis is
down; a traceback per retry buried a 30 s outage under some sixty of them
per replica. `OutageLog` logs the first failure with its traceback, then a
one-line reminder at most every `every` seconds, and one line when the
call works again. `retrying` says when the loop tries again (the group
rejoin loops wait `GROUP_REJOIN_SECONDS`, not a second).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["OutageLog"]


class OutageLog:
    """What a retrying loop says about one kind of failing call (`what`)."""

    def __init__(
        self,
        logger: logging.Logger,
        what: str,
        every: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        retrying: str = "every second",
    ) -> None:
        self._log = logger
        self._what = what
        self._retrying = retrying
        self._every = every
        self._clock = clock
        self._since: float | None = None
        self._said = 0.0
        self._failures = 0

    def failed(self, exc: BaseException) -> None:
        """Called in the loop's `except`: the first failure logs its traceback."""
        now = self._clock()
        self._failures += 1
        if self._since is None:
            self._since = self._said = now
            self._log.warning("%s failed; retrying %s", self._what, self._retrying, exc_info=exc)
        elif now - self._said >= self._every:
            self._said = now
            self._log.warning(
                "%s still failing after %.0f s (%d tries): %s",
                self._what,
                now - self._since,
                self._failures,
                exc,
            )

    def worked(self) -> None:
        """Called after each call that worked (cheap when nothing failed)."""
        if self._since is not None:
            self._log.info(
                "%s works again after %.0f s (%d failed tries)",
                self._what,
                self._clock() - self._since,
                self._failures,
            )
            self._since = None
            self._failures = 0
