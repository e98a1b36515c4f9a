"""How a logout reaches an inspector socket: its session's group, joined and heard best-effort.

Each inspector socket joins its login session's channel-layer group
(`dashboard.consumers.session_group`) under a channel of its own; a logout
on any replica sends `session.ended` there. The socket's life must not hang
on the layer (Redis): a `group_add` failing in `connect` refused the
handshake (HTTP 403), and Channels' own receive from the layer, raced
against the socket's, killed every open inspector (1011) when Redis went
away. So here the join is retried every `GROUP_REJOIN_SECONDS` for as long
as the socket lives (a Redis restarted empty forgets its members, and
channels_redis drops a member a day after it joined), and the listener
retries its receive through failures (`api.wire.layer_receive`). A logout
that finds Redis down is lost; the consumer's login recheck
(`INSPECTOR_LOGIN_RECHECK_SECONDS`) still ends the socket.

Failures are logged once per outage for all the process's sockets
(`api.wire.outage_log`), not once per socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings

from api.cluster.lost_cancels import raise_if_cancelled
from api.wire.layer_receive import receive_retrying
from api.wire.outage_log import OutageLog

__all__ = ["LogoutListener"]

log = logging.getLogger(__name__)

# How long `join` waits for the first join to land, so a logout right after
# the socket opened reaches it while Redis answers; a Redis that hangs holds
# the handshake no longer than this (the join goes on meanwhile).
JOIN_WAIT_SECONDS = 1.0
# How long `leave` waits for its `group_discard`, likewise.
LEAVE_WAIT_SECONDS = 1.0

_receive_outage = OutageLog(log, "inspector logout listeners: the channel layer's receive")
# Joins of every socket: one warning per outage, not per socket.
_join_outage = OutageLog(
    log,
    "inspector sockets joining their session groups (a logout reaches them by the"
    " login recheck only meanwhile)",
    retrying="every GROUP_REJOIN_SECONDS",
)
# Discards still running after `leave` stopped waiting (kept from the collector).
_leaving: set[asyncio.Task[None]] = set()


class LogoutListener:
    """One socket's membership of `group`: what arrives goes to `deliver`, in a task of its own.

    `join` (before the accept), then `listen` (once the socket can be
    closed), then `leave`; `stop` is the synchronous part of `leave`, safe in
    a cancelled task and from inside `deliver`. `deliver` runs in the
    listener's task and should not raise (the consumer's guarded `dispatch`).
    """

    def __init__(self, group: str, deliver: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        self._group = group
        self._deliver = deliver
        self._layer: Any = None
        self._channel: str | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._stopped = False

    async def join(self) -> None:
        """Start joining (and rejoining); wait up to `JOIN_WAIT_SECONDS` for the first join."""
        layer = get_channel_layer()
        if layer is None or self._stopped:
            return
        try:
            # A name made up in this process: no Redis call.
            channel = await layer.new_channel()
        except Exception:
            log.exception("inspector logout listener: no channel; logouts reach it by recheck only")
            return
        self._layer, self._channel = layer, channel
        first = asyncio.get_running_loop().create_future()
        self._tasks.append(asyncio.create_task(self._keep_joined(first)))
        # Not wait_for: the join is not cancelled when the wait ends.
        await asyncio.wait({first}, timeout=JOIN_WAIT_SECONDS)

    def listen(self) -> None:
        """Deliver what arrives from now on (messages sent since `join` wait in the layer)."""
        if self._channel is not None and not self._stopped:
            self._tasks.append(asyncio.create_task(self._listen()))

    def stop(self) -> None:
        """Stop joining and listening (not the task running this, which ends by itself)."""
        self._stopped = True
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()
        self._tasks = []

    async def leave(self) -> None:
        """`stop`, then leave the group: best-effort, waited for at most `LEAVE_WAIT_SECONDS`."""
        self.stop()
        layer, channel, self._channel = self._layer, self._channel, None
        if channel is None:
            return
        discard = asyncio.get_running_loop().create_task(self._discard(layer, channel))
        _leaving.add(discard)
        discard.add_done_callback(_leaving.discard)
        await asyncio.wait({discard}, timeout=LEAVE_WAIT_SECONDS)

    async def _discard(self, layer: Any, channel: str) -> None:
        # Left behind while Redis is down, the member expires with the group
        # (channels_redis's group_expiry); what is sent to it meanwhile expires unread.
        with contextlib.suppress(Exception):
            await layer.group_discard(self._group, channel)

    async def _keep_joined(self, first: asyncio.Future[None]) -> None:
        while True:
            raise_if_cancelled()
            try:
                await self._layer.group_add(self._group, self._channel)
            except Exception as exc:
                raise_if_cancelled()
                _join_outage.failed(exc)
            else:
                raise_if_cancelled()
                _join_outage.worked()
            if not first.done():
                first.set_result(None)
            await asyncio.sleep(settings.GROUP_REJOIN_SECONDS)

    async def _listen(self) -> None:
        assert self._channel is not None
        channel = self._channel
        while not self._stopped:
            message = await receive_retrying(self._layer, channel, _receive_outage)
            try:
                await self._deliver(message)
            except Exception:
                log.exception("inspector logout listener: delivering %r failed", message)
