"""The checks `manage.py loadgen` and `manage.py loadtest` make of their options.

Each runs before anything starts (no token issued, no server started, no
socket opened) and refuses the first option out of range with a one-line
CommandError naming it. Without them, `loadtest --seconds nan` printed a
summary of nonsense and exit 0, `--workers 0` died in a traceback after three
phases, `loadgen --url http://[::1` died in urllib's, `--queriers 100000000` ran
out of memory making clients, `--url http://host:8000/some/path` dropped the
path without a word, and `--rate 1e308` spun a core while claiming 1e308 req/s;
`--url http://user:pw@host:8000` printed the password in every report line,
and one server given as two `--url`s was reported as "replicas 2/2 up".
"""

from __future__ import annotations

import contextlib
import ipaddress
import math
import resource
from typing import Any
from urllib.parse import urlsplit

from django.core.management.base import CommandError

from api.wire.protocol import MAX_WORKERS  # what a querier may announce in `hello`

__all__ = [
    "MAX_RATE",
    "SPARE_FILES",
    "check_loadgen_options",
    "check_loadtest_options",
    "ws_base",
]

# Open files kept for what is not a client socket (the interpreter, Django,
# the database, gRPC) when checking the sockets asked for against the limit.
SPARE_FILES = 64
# Requests per second one load generator may be asked for: its single event
# loop sends a few thousand frames a second at most, so above this the Poisson
# gaps are shorter than one send and the command would only spin a core while
# printing a rate it never reaches.
MAX_RATE = 10_000.0


def check_loadgen_options(options: dict[str, Any], *, replicas: int) -> None:
    """`manage.py loadgen`'s options, for `replicas` URLs (its tokens: loadgen.tokens)."""
    _distinct_urls(options["url"] or [])
    _positive_seconds("--rate", options["rate"], "a number of requests per second")
    _rate_within_reach("--rate", options["rate"])
    _positive_seconds("--report-every", options["report_every"], "a number of seconds")
    if not 0.0 <= options["grpc_share"] <= 1.0:
        raise CommandError("--grpc-share must be between 0 and 1")
    _at_least("--frontends", options["frontends"], 1)
    _at_least("--queriers", options["queriers"], 0)
    _workers(options["workers"])
    for address in options["grpc"] or []:
        host, _, port = address.rpartition(":")
        if not host or not _port(port):
            raise CommandError(f"--grpc must look like 127.0.0.1:9095 (host:port), not {address!r}")
    give_up = options["give_up_after"]
    if not (math.isfinite(give_up) and give_up >= 0):
        raise CommandError(f"--give-up-after must be a number of seconds, 0 or more, not {give_up}")
    # Each querier and frontend holds one socket per replica.
    _open_files((options["queriers"] + options["frontends"]) * replicas)


def check_loadtest_options(options: dict[str, Any]) -> None:
    """`manage.py loadtest`'s options; what it measures is unchanged by them."""
    _at_least("--queriers", options["queriers"], 1)
    _workers(options["workers"])
    _at_least("--frontends", options["frontends"], 1)
    _at_least("--window", options["window"], 1)
    _positive_seconds("--seconds", options["seconds"], "a number of seconds")
    rate = options["latency_rate"]
    if not (math.isfinite(rate) and rate >= 0):
        raise CommandError(
            f"--latency-rate must be a number of requests per second, or 0 for a quarter of "
            f"the scheduler's throughput, not {rate}"
        )
    _rate_within_reach("--latency-rate", rate)
    _open_files(options["queriers"] + options["frontends"])


def ws_base(url: str) -> str:
    """`ws://host:port` (or wss) for a `--url` given as http(s)://host:port."""
    try:
        parts = urlsplit(url)
        if "@" in parts.netloc:
            # Sent nowhere (the clients authenticate with tokens), but echoed
            # in every report line: a password would be shown, and logged.
            raise CommandError(
                "--url must be a scheduler's base URL with no user name or password, "
                "like http://127.0.0.1:8000 (host:port only)"
            )
        port = parts.port  # ValueError for a port that is not one
    except ValueError as exc:
        raise CommandError(
            f"--url must look like http://127.0.0.1:8000, not {url!r}: {exc}"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise CommandError(f"--url must look like http://127.0.0.1:8000, not {url!r}")
    # The scheduler serves its sockets at /ws/... from the root only (the
    # inspector page connects there too), so a path, query or fragment could
    # only be dropped: the clients would load some other server than meant.
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise CommandError(
            f"--url must be a scheduler's base URL with no path, like "
            f"http://127.0.0.1:8000, not {url!r}"
        )
    return f"{'wss' if parts.scheme == 'https' else 'ws'}://{parts.netloc}"


def _distinct_urls(urls: list[str]) -> None:
    """CommandError when two `--url`s name one server (checked with `ws_base`'s URLs).

    Each querier would connect to it twice and the report count it as two
    replicas up ("replicas 2/2 up"), one server doing the work of two.
    """
    seen: dict[tuple[str, str, int], str] = {}
    for url in urls:
        key = _server(url)
        if key in seen:
            same = "twice" if seen[key] == url else f"as {seen[key]!r} does"
            raise CommandError(
                f"--url {url!r} names the same server {same}: give each replica once"
            )
        seen[key] = url


def _server(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL `ws_base` takes: its spellings of one server alike."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    with contextlib.suppress(ValueError):
        host = ipaddress.ip_address(host).compressed  # [::1] and [0:0::1]
    return scheme, host, parts.port or (443 if scheme == "https" else 80)


def _positive_seconds(option: str, value: float, what: str) -> None:
    if not (math.isfinite(value) and value > 0):
        raise CommandError(f"{option} must be {what} above 0, not {value}")


def _rate_within_reach(option: str, rate: float) -> None:
    if rate > MAX_RATE:
        raise CommandError(
            f"{option} must be at most {MAX_RATE:.0f} requests per second "
            f"(what one load generator can send), not {rate:g}"
        )


def _at_least(option: str, value: int, least: int) -> None:
    if value < least:
        more = "at least 1" if least == 1 else f"{least} or more"
        raise CommandError(f"{option} must be {more}, not {value}")


def _workers(value: int) -> None:
    if not 1 <= value <= MAX_WORKERS:
        raise CommandError(f"--workers must be between 1 and {MAX_WORKERS}, not {value}")


def _port(text: str) -> bool:
    return text.isascii() and text.isdigit() and 1 <= int(text) <= 65535


def _open_files(sockets: int) -> None:
    """CommandError when the client sockets asked for cannot all be open in this process.

    Past the limit the connections failed one by one with "Too many open
    files", read as a scheduler that is not running.
    """
    limit, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if limit != resource.RLIM_INFINITY and sockets > limit - SPARE_FILES:
        raise CommandError(
            f"--queriers and --frontends: {sockets} sockets, more than this process may open "
            f"(ulimit -n {limit}, {SPARE_FILES} kept for the rest)"
        )
