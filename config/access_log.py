"""Daphne's access log without the credentials a request's query string carries.

Daphne logs every HTTP request's whole URI to stdout. Frontends and queriers
may send their token as `?token=` on the websocket doors (whose log lines
leave the query out), and a client that mistakenly sends it to REST or
`/metrics` was refused (401), and its token written to the log for anyone
who reads it. Here a query parameter whose name contains token, password
or secret keeps its name and loses its value.
"""

from __future__ import annotations

import re
from typing import Any

from daphne.access import AccessLogGenerator  # type: ignore[import-untyped]

__all__ = ["RedactingAccessLog", "install", "redacted"]

_SECRET_VALUE = re.compile(r"(?i)([?&][^=&#]*(?:token|password|secret)[^=&#]*=)[^&#]*")


def redacted(uri: str) -> str:
    """`uri` with every secret-named query parameter's value replaced."""
    return _SECRET_VALUE.sub(r"\1[redacted]", uri) if "?" in uri else uri


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
