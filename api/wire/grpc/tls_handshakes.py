"""Why a client's TLS handshake with the lean door failed: said in the log, counted in a metric.

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

Every failure the log would tell (rate-limited or not) is also counted in
`queue_inspector_grpc_tls_handshake_failures_total{reason}`, `FAILURES`,
process-wide (`api.wire.metrics` exports it), so an alert can see a door
refusing its clients. The label is one of `REASONS`, never the text (it may
quote OpenSSL) nor the client's address: a scan from many addresses must
not make series. Each reason is there at 0 from the start.

May import: the standard library and `prometheus_client`.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from prometheus_client import Counter

__all__ = [
    "FAILURES",
    "REASONS",
    "Failure",
    "HandshakeFailures",
    "classify",
    "explain",
    "failure_counter",
]

log = logging.getLogger(__name__)

NO_CLIENT_CERTIFICATE = "no_client_certificate"
CLIENT_CERTIFICATE_NOT_VERIFIED = "client_certificate_not_verified"
SERVER_CERTIFICATE_REFUSED = "server_certificate_refused"
NOT_TLS = "not_tls"
OTHER = "other"
REASONS = (
    NO_CLIENT_CERTIFICATE,
    CLIENT_CERTIFICATE_NOT_VERIFIED,
    SERVER_CERTIFICATE_REFUSED,
    NOT_TLS,
    OTHER,
)

_NOT_TLS = frozenset({"WRONG_VERSION_NUMBER", "HTTP_REQUEST", "HTTPS_PROXY_REQUEST"})


class Failure(NamedTuple):
    """A failed handshake: its `reason` label (one of `REASONS`) and what to tell the operator."""

    reason: str
    why: str


def classify(exc: BaseException) -> Failure | None:
    """What `exc` says about the client's TLS settings; None if it says nothing about TLS."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return Failure(
            CLIENT_CERTIFICATE_NOT_VERIFIED,
            f"its client certificate does not verify against GRPC_TLS_CA_PATH "
            f"({exc.verify_message})",
        )
    if not isinstance(exc, ssl.SSLError) or isinstance(exc, ssl.SSLEOFError):
        return None
    reason = exc.reason or ""
    if reason == "PEER_DID_NOT_RETURN_A_CERTIFICATE":
        return Failure(
            NO_CLIENT_CERTIFICATE,
            "it sent no client certificate, which GRPC_TLS_CLIENT_AUTH="
            "RequireAndVerifyClientCert needs (its tls-cert-path and tls-key-path)",
        )
    if reason in _NOT_TLS:
        return Failure(NOT_TLS, "it does not speak TLS (a plaintext client: set its tls-enabled)")
    if "ALERT_" in reason:
        alert = reason.split("ALERT_", 1)[-1].lower().replace("_", " ")
        if "certificate" not in alert and alert != "unknown ca":
            return Failure(OTHER, f"the client ended the handshake (TLS alert: {alert})")
        return Failure(
            SERVER_CERTIFICATE_REFUSED,
            f"the client refused the door's certificate (TLS alert: {alert}); its tls-ca-path "
            "must hold the CA of GRPC_TLS_CERT_PATH, and the host it dials (or its "
            "tls-server-name) must be one the certificate names",
        )
    return Failure(OTHER, str(exc))


def explain(exc: BaseException) -> str | None:
    """What to tell the operator about `exc`; None if it says nothing about TLS."""
    failure = classify(exc)
    return None if failure is None else failure.why


def failure_counter() -> Counter:
    """The failures counter, with a series at 0 for each of `REASONS` from the start.

    A library counter, not a loop tally (`api.wire.loop_metrics`): a
    handshake failure is rare next to a request, and a client counter is
    safe to read from the scrape's thread.
    """
    counter = Counter(
        "queue_inspector_grpc_tls_handshake_failures_total",
        "TLS handshakes the lean gRPC door refused, by reason: no_client_certificate "
        "(mutual TLS needs one), client_certificate_not_verified (not signed by "
        "GRPC_TLS_CA_PATH's CA), server_certificate_refused (the client rejected the "
        "door's certificate), not_tls (a plaintext client), other. Connections that "
        "close before a handshake are not counted.",
        ("reason",),
        registry=None,  # `api.wire.metrics` registers the process's one
    )
    for reason in REASONS:
        counter.labels(reason)
    return counter


# Every lean door of the process counts here; `api.wire.metrics` registers it.
FAILURES = failure_counter()


@dataclass
class _Seen:
    logged_at: float
    since: int = 0  # failures not logged since then


class HandshakeFailures:
    """Counts every failed handshake in `counter`; logs one line per (client host,
    explanation) per `interval`."""

    def __init__(
        self,
        *,
        interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        counter: Counter = FAILURES,
    ) -> None:
        self.interval = interval
        self._clock = clock
        self._counter = counter
        self._seen: dict[tuple[str, str], _Seen] = {}

    def failed(self, host: str, port: int, exc: BaseException) -> None:
        failure = classify(exc)
        if failure is None:
            log.debug("gRPC client %s:%d left before a TLS handshake: %r", host, port, exc)
            return
        self._counter.labels(failure.reason).inc()
        why = failure.why
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
