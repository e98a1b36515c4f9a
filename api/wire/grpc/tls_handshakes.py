"""Why a client's TLS handshake with the lean door failed, said in the log.

asyncio and uvloop drop a failed server-side handshake without a word (an
SSLError is an OSError, logged only in the loop's debug mode), so a Cortex
querier with the wrong CA or no client certificate would retry for ever
while the scheduler's log stayed silent. The lean server does the handshake
itself (`lean_server.py`) and reports each failure here.

A misconfigured client retries many times a second (every worker and every
frontend connection on grpc-go's backoff), so one line per client host and
reason is written at most every `interval` seconds, counting the ones in
between. Connections that close or reset before finishing a handshake say
nothing about TLS settings (health checks, port scans): those go to DEBUG.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["HandshakeFailures", "explain"]

log = logging.getLogger(__name__)

_NOT_TLS = frozenset({"WRONG_VERSION_NUMBER", "HTTP_REQUEST", "HTTPS_PROXY_REQUEST"})


def explain(exc: BaseException) -> str | None:
    """What to tell the operator about `exc`; None if it says nothing about TLS."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return (
            f"its client certificate does not verify against GRPC_TLS_CA_PATH "
            f"({exc.verify_message})"
        )
    if not isinstance(exc, ssl.SSLError) or isinstance(exc, ssl.SSLEOFError):
        return None
    reason = exc.reason or ""
    if reason == "PEER_DID_NOT_RETURN_A_CERTIFICATE":
        return (
            "it sent no client certificate, which GRPC_TLS_CLIENT_AUTH="
            "RequireAndVerifyClientCert needs (its tls-cert-path and tls-key-path)"
        )
    if reason in _NOT_TLS:
        return "it does not speak TLS (a plaintext client: set its tls-enabled)"
    if "ALERT_" in reason:
        alert = reason.split("ALERT_", 1)[-1].lower().replace("_", " ")
        if "certificate" not in alert and alert != "unknown ca":
            return f"the client ended the handshake (TLS alert: {alert})"
        return (
            f"the client refused the door's certificate (TLS alert: {alert}); its tls-ca-path "
            "must hold the CA of GRPC_TLS_CERT_PATH, and the host it dials (or its "
            "tls-server-name) must be one the certificate names"
        )
    return str(exc)


@dataclass
class _Seen:
    logged_at: float
    since: int = 0  # failures not logged since then


class HandshakeFailures:
    """Logs failed handshakes, one line per (client host, explanation) per `interval`."""

    def __init__(
        self, *, interval: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.interval = interval
        self._clock = clock
        self._seen: dict[tuple[str, str], _Seen] = {}

    def failed(self, host: str, port: int, exc: BaseException) -> None:
        why = explain(exc)
        if why is None:
            log.debug("gRPC client %s:%d left before a TLS handshake: %r", host, port, exc)
            return
        now = self._clock()
        key = (host, why)
        seen = self._seen.get(key)
        if seen is not None and now - seen.logged_at < self.interval:
            seen.since += 1
            return
        more = ""
        if seen is not None and seen.since:
            more = f" ({seen.since} more from {host} in the last {now - seen.logged_at:.0f} s)"
        self._forget_older_than(now - self.interval)
        self._seen[key] = _Seen(now)
        log.warning("TLS handshake with gRPC client %s:%d failed: %s%s", host, port, why, more)

    def _forget_older_than(self, moment: float) -> None:
        # Bounded by the clients that failed within one interval, so a scan
        # from many addresses cannot grow it for ever; a count dropped here
        # is of failures older than the interval, no longer news.
        for key in [k for k, s in self._seen.items() if s.logged_at < moment]:
            del self._seen[key]
