"""The inspector websocket: session-authenticated, one `Viewer` per connection.

Protocol (JSON text frames). Browser → server: `subscribe` (projection,
search, page, page_size), `ack` (seq), `pause`, `resume`, `resync`, `drill`
(a node's requests: tenant, component, priority, state, search, regex,
min_wait, frontend, limit; see `dashboard.drill`) and `drill_close`.
Server → browser: `snapshot` (every section) after subscribe, resume or
resync; then `update` frames with only the sections that changed; both carry
`epoch` and `seq` (a subscribe, resync or drill from a browser `ACK_WINDOW`
frames behind is answered by one frame once it acks); `error` for a bad
message (for a refused `drill` also `drill`: the field and why, and the drill
is closed). See `dashboard.live`.

Only the site's own pages may open it (`dashboard.access.socket_origin_allowed`),
and logging out closes every inspector socket of that session, in every
tab and on every replica (a channel-layer group per session, joined and
heard best-effort by `dashboard.logout_listener`: the socket opens and
lives on through a Redis outage, and its login recheck still ends it). One session
holds at most `INSPECTOR_SOCKETS_PER_SESSION` open on a replica, and one
user at most `INSPECTOR_SOCKETS_PER_USER` over all its sessions
(`dashboard.session_sockets`); one more is accepted, told so in an `error`
frame carrying `limit`, and closed with 4429.

Frames are decoded with the same nesting limit as the machine protocol; any
exception handling one is contained (`api.wire.consumers.guard`): the viewer
is unregistered as on a disconnect, an `error` frame says so, and the socket
closes with 4500. A consumer Daphne kills (cancels) unregisters its viewer too.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.dispatch import receiver
from redis.exceptions import RedisError

from api.store.roles import role_of
from api.wire.bounded_json import loads_bounded
from api.wire.consumers.guard import GuardedConsumer
from dashboard.access import session_still_allowed, socket_origin_allowed
from dashboard.drill import DrillParams, DrillState, InvalidDrill
from dashboard.live import Viewer, get_broadcaster
from dashboard.logout_listener import LogoutListener
from dashboard.projections import InvalidViewParams, ViewParams
from dashboard.session_sockets import session_sockets
from scheduler_core.bounds import quoted

__all__ = ["InspectorConsumer", "session_group"]

log = logging.getLogger(__name__)

# Close codes (4000-4999 are the application's): not logged in / no role,
# and a page of another origin (`dashboard.access.socket_origin_allowed`).
CLOSE_UNAUTHORISED = 4401
CLOSE_FOREIGN_ORIGIN = 4403
# The session (INSPECTOR_SOCKETS_PER_SESSION) or the user (INSPECTOR_SOCKETS_PER_USER)
# already holds as many inspectors here as allowed (HTTP's 429).
CLOSE_TOO_MANY = 4429


class InspectorConsumer(GuardedConsumer):
    """Pushes live inspector views; never blocks the broadcaster."""

    viewer: Viewer | None = None
    # Where a logout reaches this socket (its `session_group`), while it can.
    logout: LogoutListener | None = None
    recheck: asyncio.Task[None] | None = None
    # The session's and the user's places this socket holds (`session_sockets`),
    # until it gives them back.
    places: tuple[str, ...] = ()

    async def connect(self) -> None:
        if not socket_origin_allowed(self.scope):
            # The session cookie rides along on a same-site page of another
            # origin; only the site's own pages may read the live queue.
            await self.close(code=CLOSE_FOREIGN_ORIGIN)
            return
        role = await database_sync_to_async(role_of)(self.scope.get("user"))
        if role is None:
            # Refusing before accept makes the handshake fail (HTTP 403).
            await self.close(code=CLOSE_UNAUTHORISED)
            return
        key = self.scope["session"].session_key or ""
        # Per user too: logging in again is a new session, with places of its own.
        places = (
            (key, "INSPECTOR_SOCKETS_PER_SESSION", "this login"),
            (f"user:{self.scope['user'].pk}", "INSPECTOR_SOCKETS_PER_USER", "this user"),
        )
        for taken, (place, setting, who) in enumerate(places):
            limit = getattr(settings, setting)
            if session_sockets.take(place, limit):
                continue
            for earlier, _, _ in places[:taken]:
                session_sockets.give_back(earlier)
            # Accepted to say why: a refused handshake reads as a network
            # failure in the browser, and the tab would not know to wait.
            await self.accept()
            await self._error(
                f"{who} already has as many inspectors open on this server as it "
                f"allows ({setting} = {limit}); close one and this one connects",
                limit=limit,
            )
            await self.close(code=CLOSE_TOO_MANY)
            return
        self.places = tuple(place for place, _, _ in places)
        # Joined before the accept, so a logout right after the page opened
        # reaches the socket; never refused for a layer that fails or hangs.
        self.logout = LogoutListener(session_group(key), self.dispatch)
        await self.logout.join()
        # Read again now the group is joined: a logout between the session's
        # first read and the join was sent to nobody, and the socket streamed
        # the queue until its login recheck. From the join on, one is heard.
        if not await self._login_holds():
            await self.session_ended({})  # before the accept: the handshake is refused
            return
        await self.accept()
        self.viewer = Viewer(self._send_text)
        get_broadcaster().register(self.viewer)
        self.logout.listen()
        self.recheck = asyncio.get_running_loop().create_task(self._recheck_login())

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Channels' `AsyncConsumer.__call__` for one source: the socket.

        As `api.wire.consumers.base.MachineConsumer`'s: no channel layer in
        the dispatch loop, so a layer that fails (Redis down) cannot end the
        socket (Channels raced the layer's receive against the socket's, and
        its `ConnectionError` closed every inspector with 1011). Logout
        messages come through `self.logout` instead.
        """
        self.scope = scope
        self.channel_layer = None
        self.base_send = send
        try:
            await self.dispatch_until_stopped(receive)
        finally:
            # Daphne kills an instance still working through a backlog
            # (`application_close_timeout` after its client left) by
            # cancelling it: no Exception, so the guard never sees it and the
            # `websocket.disconnect` queued behind the backlog never runs.
            # Without this the viewer stayed registered (the live_viewers
            # gauge up, frames built for a dead socket) for good.
            self._forget()
            with contextlib.suppress(Exception):
                await self._leave_group()

    async def disconnect(self, code: int) -> None:
        self._forget()
        await self._leave_group()

    async def _leave_group(self) -> None:
        logout, self.logout = self.logout, None
        if logout is not None:
            await logout.leave()

    def _forget(self) -> None:
        """Stop the login recheck and the logout listener, unregister the viewer (once).

        Synchronous, so a cancelled task still completes it before any await.
        """
        if self.recheck is not None and self.recheck is not asyncio.current_task():
            self.recheck.cancel()
        self.recheck = None
        if self.logout is not None:
            self.logout.stop()
        # Given back even without a viewer: a connect that failed after taking
        # its places would otherwise keep them for good.
        places, self.places = self.places, ()
        for place in places:
            session_sockets.give_back(place)
        viewer, self.viewer = self.viewer, None
        if viewer is not None:
            get_broadcaster().unregister(viewer)

    async def _recheck_login(self) -> None:
        """End the socket once its login no longer holds (expired, deactivated, role gone).

        A logout ends it at once (`session_ended`); these have no signal, so
        the login is checked again every `INSPECTOR_LOGIN_RECHECK_SECONDS`.
        """
        while True:
            await asyncio.sleep(settings.INSPECTOR_LOGIN_RECHECK_SECONDS)
            if not await self._login_holds():
                await self.session_ended({})
                return

    async def _login_holds(self) -> bool:
        """Whether this socket's login still holds (`session_still_allowed`)."""
        user = self.scope.get("user")
        key = self.scope["session"].session_key
        return await database_sync_to_async(session_still_allowed)(key, getattr(user, "pk", None))

    async def session_ended(self, event: dict[str, Any]) -> None:
        """The session logged out (in any tab, on any replica): stop showing the queue.

        Runs in the logout listener's task, the login recheck's, or the handshake's.
        """
        await self.disconnect(CLOSE_UNAUTHORISED)
        await self.close(code=CLOSE_UNAUTHORISED)

    async def _send_text(self, text: str) -> None:
        await self.send(text_data=text)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        viewer = self.viewer
        if viewer is None:
            return
        try:
            message = loads_bounded(text_data or "", unique_keys=True)
        except ValueError as exc:
            await self._error(f"frames must be JSON text: {exc}")
            return
        if not isinstance(message, dict):
            await self._error("frames must be JSON objects")
            return
        await self._handle(viewer, message)

    async def _handle(self, viewer: Viewer, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "ack":
            seq = message.get("seq")
            if isinstance(seq, int) and not isinstance(seq, bool):
                viewer.ack(seq)
                get_broadcaster().caught_up(viewer)
        elif kind == "subscribe":
            try:
                params = ViewParams.from_message(message)
            except InvalidViewParams as exc:
                await self._error(str(exc))
                return
            viewer.paused = False
            viewer.subscribe(params)
            get_broadcaster().send_now(viewer)
        elif kind == "drill":
            try:
                drill = DrillParams.from_message(message)
            except InvalidDrill as exc:
                # The drill shown so far answered another filter: no more of its rows.
                viewer.set_drill(None)
                refused = {"field": exc.field, "message": exc.message}
                await self._error(f"drill {exc}", drill=refused)
                return
            viewer.set_drill(DrillState(drill))
            get_broadcaster().send_now(viewer)
        elif kind == "drill_close":
            viewer.set_drill(None)
        elif kind == "pause":
            viewer.paused = True
        elif kind in ("resume", "resync"):
            viewer.paused = False
            viewer.resync()
            get_broadcaster().send_now(viewer)
        else:
            await self._error(f"unknown message type {quoted(kind)}")

    def failure_frame(self) -> str:
        return json.dumps({"type": "error", "message": "internal error; connection closed"})

    async def _error(self, message: str, **extra: Any) -> None:
        await self.send(text_data=json.dumps({"type": "error", "message": message, **extra}))


def session_group(session_key: str | None) -> str:
    """The channel-layer group of a login session's inspector sockets (the key hashed)."""
    digest = hashlib.sha256((session_key or "").encode()).hexdigest()[:32]
    return f"inspector-session.{digest}"


@receiver(user_logged_out, dispatch_uid="dashboard.consumers.logged_out")
def _close_sockets_of_the_session(sender: Any, request: Any = None, **kw: Any) -> None:
    # Sent before the session is flushed, so its key still names the group.
    # Without this, an inspector left open in another tab kept streaming the
    # queue (query text and all) after "Log out".
    session = getattr(request, "session", None)
    key = getattr(session, "session_key", None)
    if key is None:
        return
    # Flushed here, before the sockets hear of it (Django's own flush, after
    # this signal, then finds nothing left). A socket closed first sent its
    # page to the login page while the session still held; the login page
    # sends a signed-in user on, back to the inspector, whose new socket no
    # logout would reach (a CI run caught it: 3 in 20 under load).
    session.flush()
    try:
        async_to_sync(_announce_logout)(session_group(key))
    except (OSError, RedisError, TimeoutError) as exc:
        # Logging out must work through a Redis outage; the sockets then
        # end at their login recheck.
        log.warning("logout could not reach the inspector sockets: %s", str(exc) or "timed out")


# How long a logout waits for Redis to take its message: a paused (not dead)
# Redis held the logout request for the client's socket timeout, 15 s.
LOGOUT_SEND_SECONDS = 2.0


async def _announce_logout(group: str) -> None:
    await asyncio.wait_for(
        get_channel_layer().group_send(group, {"type": "session.ended"}), LOGOUT_SEND_SECONDS
    )
