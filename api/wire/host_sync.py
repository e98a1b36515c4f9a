"""How the runtime host keeps its scheduler config and its open sockets' tokens the database's.

`DatabaseSync` is the part of `api.wire.runtime_host.RuntimeHost` that
follows the database: it applies config changes committed in this process
at once (`api.store.config_events`), hears of the ones made in other
processes over the channel layer group (`api.wire.config_group`), and
reconciles by version every `CONFIG_RECONCILE_SECONDS` because the layer
may drop messages (how those passes fare is `reconciles`, on /metrics:
`api.wire.config_metrics`). Each step applies only what changed since the
version it applied (`api.store.config_delta`: the revisions in between name
the tenants to read again), so a write to one tenant costs one tenant's
work however many there are; a full reload only when that cannot be.
Token revocations travel the same way and close the sockets that
authenticated with the token (`api.wire.token_sockets`); each reconcile
also re-checks every open socket's token, so a lost revocation or an
expiry closes them within one interval. Starting and stopping the host is
`runtime_host`'s.

A mixin, not a part the host holds: the host's own methods stay its
public face (`host.reconcile`, `host.close_revoked_sockets`, and the
callbacks subscribed to `config_events`), as callers and tests use them.
The host provides `_loop` and `_spawn`.

May import: `api.store`, `api.wire`'s config and token modules, `scheduler_core`.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from channels.db import database_sync_to_async

from api.store import config_events, selectors, services
from api.wire import token_sockets
from api.wire.config_apply import ConfigApplier, load_update
from api.wire.config_group import ConfigGroup
from api.wire.config_metrics import ReconcileRecord
from scheduler_core.model import TenantLimits
from scheduler_core.runtime import SchedulerRuntime

__all__ = ["DatabaseSync"]

log = logging.getLogger(__name__)


class DatabaseSync:
    """The host's config version, reconciles and token re-checks (a `RuntimeHost` mixin)."""

    # Provided by the host: the loop it runs on, and how it runs a task it
    # cancels at its stop.
    _loop: asyncio.AbstractEventLoop
    _spawn: Callable[[Coroutine[Any, Any, None], str], None]

    def __init__(
        self,
        runtime: SchedulerRuntime,
        on_limits: Callable[[str, TenantLimits], None] | None = None,
    ) -> None:
        self.applied_version = -1
        self.reconciles = ReconcileRecord()
        self._config = ConfigApplier(runtime, on_limits)
        self._reconcile_lock = asyncio.Lock()
        self._group = ConfigGroup(
            self.reconcile, lambda token_id: token_sockets.registry.close_tokens([token_id])
        )

    def _listen_locally(self) -> None:
        """Hear of this process's own commits and revocations."""
        config_events.subscribe(self._on_local_change)
        config_events.subscribe_token_revoked(self._on_local_revocation)

    def _stop_listening_locally(self) -> None:
        config_events.unsubscribe(self._on_local_change)
        config_events.unsubscribe_token_revoked(self._on_local_revocation)

    # -- config ---------------------------------------------------------------

    async def reconcile(self, version: int | None = None) -> None:
        """Apply the database's config if it is newer than what we applied."""
        if version is not None and version <= self.applied_version:
            return
        async with self._reconcile_lock:
            if version is not None and version <= self.applied_version:
                return
            previous = self.applied_version
            loaded = await database_sync_to_async(load_update)(previous)
            current, delta, full, invalid = loaded
            if current == previous:
                return
            if full is not None:
                self._config.apply_full(full[1], full[2], invalid)
                log.info("applied scheduler config version %d (full reload)", current)
            else:
                assert delta is not None
                self._config.apply_delta(delta, invalid)
                log.info("applied scheduler config version %d", current)
            self.applied_version = current
        await self._fill_revision_tenants(previous, current)

    async def _fill_revision_tenants(self, previous: int, current: int) -> None:
        """Record the tenants of revisions an older replica wrote without them."""
        try:
            filled = await database_sync_to_async(services.revision_tenants_fill)(previous, current)
        except Exception as exc:
            # The history's tenant filters only: never a reason to fail a reconcile.
            log.warning(
                "could not check revisions %d-%d for their tenants (%s)", previous + 1, current, exc
            )
            return
        if filled:
            log.info("recorded the tenants of %d revision(s) written without them", filled)

    def invalid_stored(self) -> tuple[bool, int]:
        """Whether the stored settings, and how many tenant blocks, no longer validate."""
        return self._config.invalid_settings, len(self._config.invalid_tenants)

    def tenant_configured(self, tenant_id: str) -> bool:
        """Whether the applied config has a block for this tenant."""
        return self._config.configured(tenant_id)

    def _on_local_change(self, version: int) -> None:
        # Called after commit, from whichever thread committed: usually a
        # sync_to_async worker. A fresh context keeps that thread's asgiref
        # state out of the task, which would otherwise see its own database
        # calls as re-entering the busy executor and refuse them.
        self._loop.call_soon_threadsafe(self._spawn_apply, version, context=contextvars.Context())

    def _spawn_apply(self, version: int) -> None:
        self._spawn(self._broadcast(version), "config apply")

    async def _broadcast(self, version: int) -> None:
        await self.reconcile(version)
        try:
            await self._group.announce_config(version)
        except Exception as exc:
            # Applied here already; the others read it at their next reconcile.
            log.warning(
                "config #%d applied; telling the other replicas failed (%s): "
                "they apply it at their next reconcile",
                version,
                exc,
            )

    async def _reconcile_loop(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            # Each step on its own: a config that will not apply must not keep
            # the sockets of revoked or expired tokens open. A database
            # hiccup must not end either loop for good.
            try:
                with self.reconciles.attempt():
                    version = await database_sync_to_async(selectors.config_version_get)()
                    await self.reconcile(version)
            except Exception:
                log.exception("config reconcile failed; retrying in %.1fs", interval)
            try:
                await self.close_revoked_sockets()
            except Exception:
                log.exception("token re-check failed; retrying in %.1fs", interval)

    # -- token revocation --------------------------------------------------------

    async def close_revoked_sockets(self) -> int:
        """Close open sockets whose token is revoked, gone (the news may be lost) or expired."""
        return await token_sockets.registry.close_dead(token_sockets.registry.token_ids())

    def _on_local_revocation(self, token_id: int) -> None:
        # As `_on_local_change`: from the committing thread, in a fresh context.
        self._loop.call_soon_threadsafe(
            self._spawn_revocation, token_id, context=contextvars.Context()
        )

    def _spawn_revocation(self, token_id: int) -> None:
        self._spawn(self._broadcast_revocation(token_id), "token revocation")

    async def _broadcast_revocation(self, token_id: int) -> None:
        await token_sockets.registry.close_tokens([token_id])
        try:
            await self._group.announce_revocation(token_id)
        except Exception as exc:
            log.warning(
                "token %d's sockets closed here; telling the other replicas failed (%s): "
                "they close its sockets at their next reconcile",
                token_id,
                exc,
            )
