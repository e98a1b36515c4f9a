"""How config/settings.py reads its environment variables.

A helper returns its default when the variable is unset or blank (set blank,
`GRPC_HOST=` bound the gRPC door to every interface, and
`SECURE_REDIRECT_EXEMPT=` exempted nothing, where the docs promise the
default), and stops start-up with an ImproperlyConfigured
naming the variable when the value is bad: read later, a bad value was a
traceback from collectstatic, the security middleware, the database or the
scheduler runtime, or left a server whose /healthz answered while its
scheduler never started. Error messages never repeat a URL whole, since it
may carry a password.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from scheduler_core.bounds import parse_decimal

__all__ = [
    "checked_regexes",
    "database_from_env",
    "env_flag",
    "env_int",
    "env_list",
    "env_networks",
    "env_path",
    "env_seconds",
    "env_text",
    "proxy_ssl_header",
    "redis_url_from_env",
    "refusals_as_one_line",
    "var_dir",
]

REDIS_SCHEMES = ("redis", "rediss", "unix")

_ON, _OFF = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def env_flag(name: str, default: bool = False) -> bool:
    """True for 1/true/yes/on, False for 0/false/no/off (any case); the default
    when unset or empty. Anything else stops start-up, naming the variable: read
    as off, `METRICS_REQUIRE_LOGIN=ture` left /metrics open without a word."""
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    if value not in _ON | _OFF:
        raise ImproperlyConfigured(
            f"{name} must be one of 1/true/yes/on or 0/false/no/off, not {value!r}"
        )
    return value in _ON


def env_text(name: str, default: str) -> str:
    """The variable's value, stripped; the default when unset or blank."""
    return os.environ.get(name, "").strip() or default


def env_list(name: str, default: str) -> list[str]:
    """A comma-separated variable as a list, blanks dropped; the default's when unset or blank."""
    return [item.strip() for item in env_text(name, default).split(",") if item.strip()]


def env_int(name: str, default: int, *, least: int = 0, most: int | None = None) -> int:
    """A whole number of at least `least` (and at most `most`); a bad value stops
    start-up, naming the variable."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    value = parse_decimal(raw)
    if value is None or value < least or (most is not None and value > most):
        span = f"at least {least}" if most is None else f"from {least} to {most}"
        raise ImproperlyConfigured(f"{name} must be a whole number {span}, not {raw!r}")
    return value


def env_networks(name: str) -> list[str]:
    """A comma-separated list of IP addresses or networks; a bad one stops start-up by name."""
    networks = env_list(name, "")
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise ImproperlyConfigured(
                f"{name} must list IP addresses or networks (10.0.0.0/8), not {network!r}"
            ) from None
    return networks


def env_seconds(
    name: str, default: float, *, zero_ok: bool = False, least: float | None = None
) -> float:
    """A positive (or, `zero_ok`, 0; or at least `least`), finite number of seconds;
    a bad value stops start-up, naming the variable."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if least is not None:
        ok, wanted = value >= least, f"at least {least}"
    else:
        ok = value > 0 or (zero_ok and value == 0)
        wanted = "at least 0" if zero_ok else "above 0"
    if not (math.isfinite(value) and ok):
        raise ImproperlyConfigured(f"{name} must be a number of seconds {wanted}, not {raw!r}")
    return value


def proxy_ssl_header(name: str) -> tuple[str, str] | None:
    """`X-Forwarded-Proto: https` (the header your proxy sets, and its HTTPS value)
    as Django's ("HTTP_X_FORWARDED_PROTO", "https"); None when unset."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    header, sep, value = raw.partition(":")
    header, value = header.strip(), value.strip()
    if not sep or not header or not value or not header.replace("-", "").isalnum():
        raise ImproperlyConfigured(
            f"{name} must look like 'X-Forwarded-Proto: https' (header: value), not {raw!r}"
        )
    return "HTTP_" + header.upper().replace("-", "_"), value


def env_path(name: str, default: Path) -> Path:
    """A path; the default when unset or blank (an empty value was the current directory)."""
    raw = os.environ.get(name, "").strip()
    return Path(raw) if raw else default


def var_dir(name: str, default: Path) -> Path:
    """`env_path`, created if missing; one that cannot be stops start-up by name."""
    path = env_path(name, default)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ImproperlyConfigured(
            f"{name}: cannot create the directory {str(path)!r}: {exc.strerror or exc}"
        ) from None
    return path


def checked_regexes(name: str, patterns: list[str]) -> list[str]:
    """The patterns, each compiled once here; one that is not a regex stops start-up by name."""
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ImproperlyConfigured(
                f"{name}: {pattern!r} is not a regular expression ({exc})"
            ) from None
    return patterns


def redis_url_from_env(name: str) -> str:
    """A Redis URL (redis://, rediss:// or unix://) as redis-py reads it, or "" when
    unset or blank; one redis-py would refuse stops start-up by name. Accepted, such a
    URL left /healthz answering while the scheduler runtime never started."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return ""
    from redis.connection import parse_url

    scheme, sep, _ = raw.partition("://")
    scheme = scheme if sep else ""
    if scheme.lower() not in REDIS_SCHEMES:
        got = f"scheme {scheme!r}" if scheme else "no scheme"
        raise ImproperlyConfigured(
            f"{name} must be a redis://, rediss:// or unix:// URL "
            f"(e.g. redis://host:6379/0), not one with {got}"
        )
    try:
        parse_url(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} is not a valid Redis URL: {exc}") from None
    return raw


def database_from_env(name: str, default_url: str, conn_max_age: int) -> dj_database_url.DBConfig:
    """Django's DATABASES entry for the URL `name` holds (`default_url` when unset or
    blank); one dj-database-url cannot read stops start-up by name."""
    url = os.environ.get(name, "").strip() or default_url
    try:
        return dj_database_url.parse(url, conn_max_age=conn_max_age)
    except ValueError as exc:  # UnknownSchemeError, ParseError and the port's own
        raise ImproperlyConfigured(
            f"{name}: {exc} (e.g. postgres://user:password@host:5432/name)"
        ) from None


# Where the settings' own refusals are raised: this module, config/settings.py
# and config/secret_key.py.
_REFUSING_FILES = {
    Path(__file__).resolve(),
    *(Path(__file__).resolve().with_name(name) for name in ("settings.py", "secret_key.py")),
}


@contextmanager
def refusals_as_one_line() -> Iterator[None]:
    """Around loading the settings (manage.py, config.serve): a refusal of theirs
    stops the process with `error: <message>` on stderr and status 1, not a page of
    traceback. An ImproperlyConfigured raised anywhere else (Django's app
    loading, a module the settings import) goes on as it was, traceback and all:
    there, where it was raised is the news."""
    try:
        yield
    except ImproperlyConfigured as exc:
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is None or Path(tb.tb_frame.f_code.co_filename).resolve() not in _REFUSING_FILES:
            raise
        raise SystemExit(f"error: {exc}") from None
