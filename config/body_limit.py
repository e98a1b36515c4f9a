"""Request bodies larger than any endpoint takes are refused as they arrive.

Twisted receives a request's whole body (past 100 KB into a temporary file)
before Daphne hands the request to Django, and only then do authentication
and the API's own limits apply: an anonymous client could send a directly
reachable Daphne gigabytes, stored and read back before it answered 401,
and a `Content-Length` of a terabyte held the connection open waiting.
`install()` makes Daphne's HTTP connections answer 413 as soon as a body
is declared (`Content-Length`) or has grown (chunked) past
`MAX_BODY_BYTES`, storing none of it and never calling the application.

The limit is the largest body any endpoint takes (a runtime-config import,
32 MiB, `api.rest.content`) with room for its headers' worth of slack; the
endpoints' own, smaller limits still answer their own JSON errors below it.
The shipped nginx site allows the same (`client_max_body_size 33m`).

Closing at once lost the answer: most clients (Python's http.client,
urllib, requests) send the whole body before they read, and a socket
closed with their bytes unread is reset, so they saw a broken pipe, not
the 413. So, as nginx's lingering close does, the connection's sending
side is closed after the 413 and what the client still sends is read and
dropped, for at most `LINGER_SECONDS`; then the connection is aborted.
Each refusal is one WARNING line (the access log never sees it).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from config.access_log import redacted

__all__ = ["LINGER_SECONDS", "MAX_BODY_BYTES", "install", "refusal"]

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 33 * 1024 * 1024
LINGER_SECONDS = 30.0


def refusal(size: int | None, limit: int) -> bytes:
    """The whole 413 response, closing the connection; `size` None: chunked, still growing."""
    grown = "a chunked body grew past" if size is None else f"a body of {size} bytes is over"
    body = json.dumps(
        {"detail": f"request body too large: {grown} the {limit} bytes this server takes"}
    ).encode()
    head = (
        "HTTP/1.1 413 Content Too Large\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


def install(clock: Any, limit: int = MAX_BODY_BYTES, linger: float = LINGER_SECONDS) -> None:
    """Make every HTTP connection Daphne accepts from now on refuse bodies over
    `limit` (`clock`: the reactor, for the lingering close)."""
    from daphne import http_protocol  # type: ignore[import-untyped]
    from twisted.web import http

    class LimitedRequest(http_protocol.WebRequest):  # type: ignore[misc]
        refused = False
        received = 0

        def handleContentChunk(self, data: bytes) -> None:  # noqa: N802 - Twisted's name
            if self.refused:
                return
            self.received += len(data)
            if self.received > limit:
                refuse(self.channel, self, None)
                return
            super().handleContentChunk(data)

        def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:  # noqa: N802
            # Bytes already read past the refusal still end the body: the
            # application never hears of a request it was not given.
            if not self.refused:
                super().requestReceived(command, path, version)

    class LimitedChannel(http.HTTPChannel):  # type: ignore[misc]
        discarding = False  # refused: the rest of what the client sends is dropped

        def dataReceived(self, data: bytes) -> None:  # noqa: N802 - Twisted's name
            if not self.discarding:
                super().dataReceived(data)

        def allHeadersReceived(self) -> None:  # noqa: N802 - Twisted's name
            if self.length is not None and self.length > limit:
                # Before Twisted's own: it would answer `Expect: 100-continue`.
                refuse(self, self.requests[-1], self.length)
                return
            super().allHeadersReceived()

    def refuse(channel: Any, request: Any, size: int | None) -> None:
        request.refused = True
        channel.discarding = True
        transport = channel.transport
        peer = transport.getPeer()
        log.warning(
            "%s %s from %s: %s; refused (413), the limit is %d bytes",
            # The request line as the channel read it: the request's own
            # fields are filled only once the whole body has come.
            channel._command.decode("latin-1", "replace")[:20],
            # Without a token a query string may carry, as the access log.
            redacted(channel._path.decode("latin-1", "replace"))[:200],
            getattr(peer, "host", peer),
            "a chunked body grew past it" if size is None else f"a body of {size} bytes",
            limit,
        )
        transport.write(refusal(size, limit))
        half_close = getattr(transport, "loseWriteConnection", None)
        if half_close is None:
            channel.loseConnection()
            return
        half_close()
        clock.callLater(linger, transport.abortConnection)

    http_protocol.WebRequest = LimitedRequest
    http_protocol.HTTPFactory.protocol = LimitedChannel
