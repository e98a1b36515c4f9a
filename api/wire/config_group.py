"""The channel layer group through which processes tell each other of changes.

A process that commits a config change or revokes a token applies it at
once and announces it to the group "scheduler-config"; every process of the
service listens there and applies what it hears. The news may be lost (the
layer drops messages, Redis restarts), so the host also reconciles by
version and re-checks open sockets' tokens on a timer; this module only
carries the messages: `config.changed` with a `version`, `token.revoked`
with a `token_id`.

Used by `api.wire.runtime_host`; imports only Channels.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from channels.layers import get_channel_layer

from api.cluster.lost_cancels import raise_if_cancelled
from api.wire.layer_receive import receive_retrying
from api.wire.outage_log import OutageLog

__all__ = ["CONFIG_GROUP", "ConfigGroup", "keep_membership"]

log = logging.getLogger(__name__)

CONFIG_GROUP = "scheduler-config"


class ConfigGroup:
    """This process's membership of the group: what it hears goes to two callbacks."""

    def __init__(
        self,
        on_config_changed: Callable[[int], Awaitable[None]],
        on_token_revoked: Callable[[int], Awaitable[Any]],
    ) -> None:
        self._on_config_changed = on_config_changed
        self._on_token_revoked = on_token_revoked
        self._channel: str | None = None

    async def join(self) -> Coroutine[Any, Any, None] | None:
        """Join the group; the listening coroutine for the caller to run, if any layer."""
        layer = get_channel_layer()
        if layer is None:
            return None
        # The default prefix, shared with every other process-local channel
        # (consumers', the queue peers'): channels_redis receives one prefix
        # at a time, so a second prefix would stall behind the first.
        self._channel = await layer.new_channel()
        await layer.group_add(CONFIG_GROUP, self._channel)
        return self._listen(layer, self._channel)

    async def rejoin(self) -> None:
        """Join again (`RuntimeHost` calls this every few seconds); see `keep_membership`."""
        layer = get_channel_layer()
        if layer is not None and self._channel is not None:
            await layer.group_add(CONFIG_GROUP, self._channel)

    async def leave(self) -> None:
        layer = get_channel_layer()
        if layer is not None and self._channel is not None:
            with contextlib.suppress(Exception):
                await layer.group_discard(CONFIG_GROUP, self._channel)

    @staticmethod
    async def announce_config(version: int) -> None:
        await _announce({"type": "config.changed", "version": version})

    @staticmethod
    async def announce_revocation(token_id: int) -> None:
        await _announce({"type": "token.revoked", "token_id": token_id})

    async def _listen(self, layer: Any, channel: str) -> None:
        # A Redis hiccup must not end listening for good; what was missed
        # meanwhile, the reconcile loop picks up.
        outage = OutageLog(log, "config listener: the channel layer's receive")
        while True:
            message = await receive_retrying(layer, channel, outage)
            version = message.get("version")
            if message.get("type") == "config.changed" and isinstance(version, int):
                await self._on_config_changed(version)
            token_id = message.get("token_id")
            if message.get("type") == "token.revoked" and isinstance(token_id, int):
                await self._on_token_revoked(token_id)


async def keep_membership(
    rejoins: Sequence[Callable[[], Awaitable[None]]], interval: float
) -> None:
    """Join this process's groups again every `interval` seconds, for good.

    Membership lives in the channel layer, not here: a Redis restarted empty
    has forgotten it, and channels_redis drops a member `group_expiry` (a
    day) after it joined. Joined once at start, a replica then heard no
    config news (config reached it only by the reconcile loop, 5 s late) and
    answered no peer, so listings and cancels across replicas named it
    missing for good, while every health signal said it was up.
    """
    outage = OutageLog(
        log, "joining the channel layer groups again", retrying=f"every {interval:g} s"
    )
    while True:
        raise_if_cancelled()
        await asyncio.sleep(interval)
        try:
            for rejoin in rejoins:
                await rejoin()
        except Exception as exc:
            raise_if_cancelled()
            outage.failed(exc)
            continue
        outage.worked()


async def _announce(message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is not None:
        await layer.group_send(CONFIG_GROUP, message)
