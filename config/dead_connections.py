"""Connections a client reset are ended, and Daphne's reaper never stops.

Two faults of the stack under Daphne, each found by a memory soak:

- **uvloop's closed poll.** When a client sends its request and resets
  the connection at once, the kernel reports the data and the error
  together. uvloop then runs the reader once (Twisted reads the request
  and sees no error yet) and closes its poll of the descriptor for good,
  without telling Twisted. When the answer is written, Twisted asks to
  watch the descriptor for writing and uvloop raises `RuntimeError` ("the
  handler is closed"): the connection, its request and its socket were
  kept for good, and the error reached the application as an exception.
  Here such a refusal ends the connection instead, as the loss it is: on
  the next loop turn the descriptor is unwatched (which lets uvloop drop
  its closed poll) and the connection is told it was lost, so Daphne
  reports `http.disconnect` and forgets it. The plain asyncio loop reports
  the reset on the next read and never gets here.

- **Daphne's reaper.** Once a second `Server.application_checker` forgets
  finished requests and closed connections. For an application that failed
  it asks the connection to answer 500; if part of the response was
  already sent, that raises `ValueError`, which escaped the checker before
  it scheduled its next run: from then on no connection was ever
  forgotten, and memory grew about 12 KB a request. Here a connection
  whose response has started is ended instead (nothing else can be said to
  its client), so the checker goes on.

`install(reactor)` puts both in place before Daphne starts (config.serve).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

__all__ = ["install"]

log = logging.getLogger(__name__)


def install(reactor: Any) -> None:
    """Make the reactor end connections whose descriptor its loop can no
    longer watch, and Daphne's requests survive a failure after their start."""
    from daphne import http_protocol  # type: ignore[import-untyped]
    from twisted.internet import error
    from twisted.python import failure

    def lost(selectable: Any) -> None:
        if getattr(selectable, "disconnected", 0):
            return  # told once already (each refused add schedules this)
        reactor.removeReader(selectable)
        reactor.removeWriter(selectable)
        # The loop's closed watch goes too, also when Twisted had not
        # registered it: left, it refused the next connection given this
        # descriptor number.
        loop = asyncio.get_running_loop()
        descriptor = selectable.fileno()
        if descriptor >= 0:
            loop.remove_reader(descriptor)
            loop.remove_writer(descriptor)
        reason = error.ConnectionLost("the event loop closed its watch of the connection")
        selectable.connectionLost(failure.Failure(reason))

    def ending_on_refusal(add: Any) -> Any:
        def add_or_end(selectable: Any) -> None:
            try:
                add(selectable)
            except RuntimeError as exc:
                log.info("ending a connection the event loop refuses to watch: %s", exc)
                # Not now: this runs inside the connection's own write.
                reactor.callLater(0, lost, selectable)

        return add_or_end

    reactor.addReader = ending_on_refusal(reactor.addReader)
    reactor.addWriter = ending_on_refusal(reactor.addWriter)

    class AnsweredRequest(http_protocol.WebRequest):  # type: ignore[misc]
        def handle_exception(self, exception: BaseException) -> None:
            try:
                super().handle_exception(exception)
            except ValueError:
                # The 500 page cannot follow a response already started.
                self.channel.transport.abortConnection()

    http_protocol.WebRequest = AnsweredRequest
