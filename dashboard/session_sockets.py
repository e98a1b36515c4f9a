"""How many inspector sockets each login session holds open in this process.

Every open inspector costs a frame built each tick (`dashboard.live`), so
one session may hold at most `INSPECTOR_SOCKETS_PER_SESSION` at once on a
replica: a script replaying a session cookie cannot make the broadcaster
build thousands, and a person's tabs stay far below the cap. Logging in
again makes a new session, so each user is held too, to
`INSPECTOR_SOCKETS_PER_USER` over all its sessions (counted here under
`user:<id>`, a name no session key takes).

Invariant: a session's count is the number of sockets that took a place and
have not given it back, and a session with none is not kept (a server up
for months holds only the sessions open now). Consumers run on the event
loop, so take and give back need no lock. Imports nothing of the project.
"""

from __future__ import annotations

__all__ = ["SessionSockets", "session_sockets"]


class SessionSockets:
    """Places for inspector sockets, counted per session key."""

    def __init__(self) -> None:
        self._open: dict[str, int] = {}

    def take(self, key: str, limit: int) -> bool:
        """Count one more socket of `key`; False (and nothing counted) at `limit`."""
        held = self._open.get(key, 0)
        if held >= limit:
            return False
        self._open[key] = held + 1
        return True

    def give_back(self, key: str) -> None:
        """A socket that took a place has closed; call once per successful `take`."""
        held = self._open.get(key, 0) - 1
        if held > 0:
            self._open[key] = held
        else:
            self._open.pop(key, None)

    def held(self, key: str) -> int:
        return self._open.get(key, 0)


session_sockets = SessionSockets()
