"""Reading client messages so a malformed one fails only its own stream.

grpcio decodes each message while the servicer reads it; a decode error then
surfaces inside the servicer and would end the RPC as UNKNOWN with an error
log. Aborting with INVALID_ARGUMENT tells the client what was wrong.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, TypeVar

import grpc
from google.protobuf.message import DecodeError

__all__ = ["checked_messages", "checked_read"]

T = TypeVar("T")


async def checked_messages(
    messages: AsyncIterator[T], context: grpc.aio.ServicerContext[Any, Any]
) -> AsyncIterator[T]:
    """The stream's messages; a malformed one aborts the stream."""
    try:
        async for message in messages:
            yield message
    except DecodeError as exc:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed message: {exc}")


async def checked_read(context: grpc.aio.ServicerContext[Any, Any]) -> Any:
    """One message (or grpc.aio.EOF); a malformed one aborts the stream."""
    try:
        return await context.read()
    except DecodeError as exc:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed message: {exc}")
