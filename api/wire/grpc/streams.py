"""Reading client messages so a malformed one fails only its own stream.

grpcio decodes each message while the servicer reads it; a decode error then
surfaces inside the servicer and would end the RPC as UNKNOWN with an error
log. Aborting with INVALID_ARGUMENT tells the client what was wrong.

`answer_each` serves a stream that answers every message once, in order,
without awaiting: on the lean server inside the connection's
`data_received` (`lean_call.LeanCall.serve_inline`), on grpcio by reading
and writing in turn. `AbortError` is how code that cannot await (such an
answer, or the lean call itself) ends the call with a status.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError

__all__ = ["AbortError", "answer_each", "checked_read", "malformed"]


class AbortError(Exception):
    """Ends the call with `code` and `details` (what `context.abort` raises)."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


def malformed(exc: DecodeError) -> AbortError:
    """How a message that does not decode ends its call."""
    return AbortError(grpc.StatusCode.INVALID_ARGUMENT, f"malformed message: {exc}")


async def checked_read(context: grpc.aio.ServicerContext[Any, Any]) -> Any:
    """One message (or grpc.aio.EOF); a malformed one aborts the stream."""
    try:
        return await context.read()
    except DecodeError as exc:
        refused = malformed(exc)
        await context.abort(refused.code, refused.details)


async def answer_each(
    context: grpc.aio.ServicerContext[Any, Any], answer: Callable[[Any], Any]
) -> None:
    """Reply to every further message with `answer(message)` until the peer half-closes.

    `answer` may raise AbortError to end the call with that status.
    """
    inline = getattr(context, "serve_inline", None)
    if inline is not None:
        await inline(answer)
        return
    while (message := await checked_read(context)) is not grpc.aio.EOF:
        try:
            reply = answer(message)
        except AbortError as exc:
            await context.abort(exc.code, exc.details)
        await context.write(reply)
