"""Reading client messages so a malformed one fails only its own stream.

grpcio decodes each message while the servicer reads it; a decode error then
surfaces inside the servicer and would end the RPC as UNKNOWN with an error
log. Aborting with INVALID_ARGUMENT tells the client what was wrong.
"""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf.message import DecodeError

__all__ = ["checked_read"]


async def checked_read(context: grpc.aio.ServicerContext[Any, Any]) -> Any:
    """One message (or grpc.aio.EOF); a malformed one aborts the stream."""
    try:
        return await context.read()
    except DecodeError as exc:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed message: {exc}")
