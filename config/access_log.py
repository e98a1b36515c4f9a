"""Daphne's access log without the credentials a request's query string carries.

Daphne logs every HTTP request's whole URI to stdout. Frontends and queriers
may send their token as `?token=` on the websocket doors (whose log lines
leave the query out), and a client that mistakenly sends it to REST or
`/metrics` was refused (401), and its token written to the log for anyone
who reads it. Here a query parameter whose name, percent-decoded as Django
reads it, contains one of `SECRET_WORDS` keeps its name and loses its
value. The list is wider than the actor header's (`scheduler_core.
queue_settings`): in a log, a value hidden needlessly costs nothing.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote_plus

from daphne.access import AccessLogGenerator  # type: ignore[import-untyped]

__all__ = ["SECRET_WORDS", "RedactingAccessLog", "install", "redacted"]

SECRET_WORDS = ("token", "secret", "passw", "session", "credential", "key", "sig", "auth", "code")


def _secret(name: str) -> bool:
    decoded = unquote_plus(name).lower()
    return any(word in decoded for word in SECRET_WORDS)


def redacted(uri: str) -> str:
    """`uri` with every secret-named query parameter's value replaced."""
    path, question, rest = uri.partition("?")
    if not question:
        return uri
    query, hash_, fragment = rest.partition("#")
    items = []
    for item in query.split("&"):
        name, equals, _ = item.partition("=")
        items.append(f"{name}=[redacted]" if equals and _secret(name) else item)
    return f"{path}?{'&'.join(items)}{hash_}{fragment}"


class RedactingAccessLog(AccessLogGenerator):  # type: ignore[misc]
    """Daphne's access log, each line's path passed through `redacted` first."""

    def __call__(self, protocol: str, action: str, details: dict[str, Any]) -> None:
        path = details.get("path")
        if isinstance(path, str):
            details = {**details, "path": redacted(path)}
        super().__call__(protocol, action, details)


def install() -> None:
    """Make Daphne's command line write its access log through `RedactingAccessLog`."""
    import daphne.cli  # type: ignore[import-untyped]

    daphne.cli.AccessLogGenerator = RedactingAccessLog
