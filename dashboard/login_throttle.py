"""Login throttling: after repeated wrong passwords, logins are refused for a while.

Counted separately per user name and per client address, as django-axes
does: `LOGIN_FAILURE_LIMIT` wrong passwords for one user name (default 5),
or `LOGIN_FAILURE_LIMIT_PER_ADDRESS` from one address (default 20), within
`LOGIN_FAILURE_WINDOW_SECONDS` (default 900) lock that user name, or that
address, out for `LOGIN_LOCKOUT_SECONDS` (default 900). During a lockout
even the right password is refused, with a message saying so and for how
long (the login page answers 429 with Retry-After); afterwards logins work
again, and a successful one clears its user name's count. A browser that
has logged in as a user before is counted apart from strangers, so that
nobody can lock anybody else out by naming them (dashboard/login_devices.py).

How: a backend placed first in `AUTHENTICATION_BACKENDS` refuses a locked
user or address before any password is checked (`PermissionDenied` stops
Django's `authenticate`), and counts the attempt then, before its password
is checked: an attempt past the limit is refused as a lockout. Counted only
once it had failed, 25 wrong passwords sent at once were all checked (each
passed the lockout check before any was counted), and a burst holding the
right one logged in. `user_login_failed` locks a subject its failure
brought to the limit; `user_logged_in` clears the user name's count and
gives back the attempt its address was counted. The address is the
peer's, or the client's as forwarded by a proxy listed in
`LOGIN_TRUSTED_PROXIES` (`client_address`). Counts live in Django's cache:
Redis when `REDIS_URL` is set, so every replica sees the same counts, else
this process's memory. Windows are fixed buckets of the window's length,
and a count is this bucket's plus the previous one's, so no burst gets
more than the limit through by straddling a bucket edge. A lockout starts
its subject's count again. Time comes from `clock` (tests replace it).
Logins without a request (management commands) are not throttled.

While the cache cannot be reached (Redis down), the throttle fails open:
logins are checked as if nobody were locked out and failures go uncounted,
with a warning logged, because everything else keeps working through a
Redis outage and the operator who needs the inspector then must still be
able to log in. Wrong passwords are still refused, by the next backend.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from ipaddress import IPv4Network, IPv6Network, ip_address, ip_network
from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, ValidationError
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from redis.exceptions import RedisError

from dashboard.login_devices import device_for, remember_device

__all__ = [
    "LoginThrottleBackend",
    "ThrottledAdminAuthenticationForm",
    "ThrottledAuthenticationForm",
    "ThrottledLoginView",
    "clock",
    "locked_for",
    "lockout_message",
]

clock: Callable[[], float] = time.time

_PREFIX = "login-throttle"

log = logging.getLogger(__name__)


@contextmanager
def _failing_open(doing: str) -> Iterator[None]:
    """Skip the throttle's step, with a warning, when the cache cannot be reached."""
    try:
        yield
    # Django's Redis cache lets redis-py's errors through; one line each, no
    # traceback: during an outage every login attempt would log one.
    except (OSError, RedisError) as exc:
        log.warning("login throttle skipped %s: cache unreachable (%s)", doing, exc)


def _limits() -> tuple[int, int, float, float]:
    return (
        int(getattr(settings, "LOGIN_FAILURE_LIMIT", 5)),
        int(getattr(settings, "LOGIN_FAILURE_LIMIT_PER_ADDRESS", 20)),
        float(getattr(settings, "LOGIN_FAILURE_WINDOW_SECONDS", 900)),
        float(getattr(settings, "LOGIN_LOCKOUT_SECONDS", 900)),
    )


def _key(kind: str, value: str) -> str:
    # Hashed: user names and addresses are not cache-key safe, and need not be stored.
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{_PREFIX}:{kind}:{digest}"


def _subjects(
    username: str | None, address: str | None, device: str | None = None
) -> list[tuple[str, int]]:
    """(key, limit) for each thing counted: the user name, or instead the
    device of a browser that has logged in as it (`device_for`); and the address."""
    user_limit, address_limit, _, _ = _limits()
    subjects = []
    if device:
        subjects.append((_key("device", device), user_limit))
    elif username:
        # As written, not case-folded: Django's user names are case-sensitive,
        # so "Alice" is another account, and her login cleared the count of
        # "alice" that both shared (endless guesses at alice's password).
        subjects.append((_key("user", username), user_limit))
    if address:
        subjects.append((_key("address", address), address_limit))
    return subjects


def client_address(request: HttpRequest | None) -> str | None:
    """The address counted: the peer's, or behind trusted proxies the client's they forward.

    `X-Forwarded-For` is read only when the peer is one of
    `LOGIN_TRUSTED_PROXIES`, and then from the right: the last address no
    trusted proxy holds is the one the nearest proxy saw. The left end is
    whatever the client wrote (a proxy appends to the header it got), so
    taking it, as Daphne's `--proxy-headers` does, let one client spread its
    failures over made-up addresses and never reach the per-address limit.
    """
    if request is None:
        return None
    peer = str(request.META.get("REMOTE_ADDR") or "") or None
    proxies = _trusted_proxies(tuple(getattr(settings, "LOGIN_TRUSTED_PROXIES", ())))
    if peer is None or not _held_by(peer, proxies):
        return peer
    forwarded = str(request.META.get("HTTP_X_FORWARDED_FOR") or "").split(",")
    for address in reversed([part.strip() for part in forwarded if part.strip()]):
        if not _held_by(address, proxies):
            return address
    return peer


@lru_cache(maxsize=8)
def _trusted_proxies(networks: tuple[str, ...]) -> tuple[IPv4Network | IPv6Network, ...]:
    return tuple(ip_network(network, strict=False) for network in networks)


def _held_by(address: str, networks: tuple[IPv4Network | IPv6Network, ...]) -> bool:
    try:
        ip = ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def locked_for(username: str | None, address: str | None, device: str | None = None) -> float:
    """Seconds until both the user name (or device) and the address may log in again (0: now)."""
    now = clock()
    waits = [0.0]
    for key, _ in _subjects(username, address, device):
        until = cache.get(f"{key}:locked")
        if until is not None and float(until) > now:
            waits.append(float(until) - now)
    return max(waits)


def _lock(key: str, now: float, bucket: int) -> None:
    """Lock a subject out, then start its count again for after the lockout.

    In that order: an attempt counted after the reset finds the lock when it
    looks again (`reserve_attempt`), and one counted before it is over the
    limit; so no attempt slips between the two.
    """
    lockout = _limits()[3]
    cache.set(f"{key}:locked", now + lockout, timeout=int(lockout + 60))
    cache.delete_many([f"{key}:{bucket}", f"{key}:{bucket - 1}"])


def _count(key: str, bucket: int) -> int:
    """A subject's attempts in this bucket and the one before."""
    counts = cache.get_many([f"{key}:{bucket}", f"{key}:{bucket - 1}"])
    return sum(int(n) for n in counts.values())


def reserve_attempt(
    username: str | None, address: str | None, device: str | None = None
) -> tuple[str | None, float]:
    """Count one attempt before its password is checked.

    Returns the address's bucket key (for `release_attempt`), and the
    seconds the attempt is refused for unchecked (0: check it): a subject
    now past its limit is locked here, and one locked since `locked_for`
    last looked is too. Counted atomically (`incr`), so of any number of
    attempts at once at most the limit get their password checked.
    """
    now = clock()
    _, _, window, _ = _limits()
    bucket = int(now // window)
    keep = int(2 * window + 60)
    counted = None
    for key, limit in _subjects(username, address, device):
        current = f"{key}:{bucket}"
        cache.add(current, 0, timeout=keep)
        try:
            count = cache.incr(current)
        except ValueError:  # evicted between add and incr
            cache.set(current, 1, timeout=keep)
            count = 1
        if key.startswith(f"{_PREFIX}:address:"):
            counted = current
        if count + int(cache.get(f"{key}:{bucket - 1}") or 0) > limit:
            _lock(key, now, bucket)
    return counted, locked_for(username, address, device)


def lock_if_at_limit(username: str | None, address: str | None, device: str | None = None) -> None:
    """After a wrong password (already counted): lock whichever subject it brought to its limit."""
    now = clock()
    bucket = int(now // _limits()[2])
    for key, limit in _subjects(username, address, device):
        if _count(key, bucket) >= limit:
            _lock(key, now, bucket)


def release_attempt(counted: str | None) -> None:
    """A login that worked gives its address back the attempt it was counted."""
    if counted is not None:
        with contextlib.suppress(ValueError):  # the bucket expired meanwhile
            cache.decr(counted)


def clear_user(username: str | None, device: str | None = None) -> None:
    """A successful login forgets the failures counted where it was: its device's
    when it had one, else its user name's (not its address's). A known browser
    leaves the user name's lockout in place: that one holds strangers."""
    _, _, window, _ = _limits()
    bucket = int(clock() // window)
    keys = [key for key, _ in _subjects(username, None, device)]
    cache.delete_many([f"{key}:{end}" for key in keys for end in (bucket, bucket - 1, "locked")])


def lockout_message(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    unit = "minute" if minutes == 1 else "minutes"
    return (
        "Too many failed logins for this account or from this address. "
        f"Logins are refused for {minutes} {unit}, even with the right password."
    )


class LoginThrottleBackend:
    """First in AUTHENTICATION_BACKENDS: refuses locked-out logins, checks no password.

    It has no `get_user` on purpose: it never logs anyone in, so sessions
    and `force_login` must pick the next backend, not this one.
    """

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        if request is None:
            return None
        address, device = client_address(request), device_for(request, username)
        wait = 0.0
        with _failing_open("checking for a lockout"):
            wait = locked_for(username, address, device)
            if wait <= 0:
                counted, wait = reserve_attempt(username, address, device)
                request.login_counted = counted  # type: ignore[attr-defined]
        if wait > 0:
            request.login_locked_for = wait  # type: ignore[attr-defined]
            raise PermissionDenied(lockout_message(wait))
        return None


@receiver(user_login_failed, dispatch_uid="dashboard.login_throttle.failed")
def _on_failure(sender: Any, credentials: dict[str, Any], request: Any = None, **kw: Any) -> None:
    # Refusals during a lockout are not counted: they must not extend it.
    if request is None or getattr(request, "login_locked_for", 0):
        return
    username = credentials.get("username")
    with _failing_open("locking after a failed login"):
        lock_if_at_limit(username, client_address(request), device_for(request, username))


@receiver(user_logged_in, dispatch_uid="dashboard.login_throttle.logged_in")
def _on_login(sender: Any, request: Any, user: Any, **kw: Any) -> None:
    if request is not None:
        username = user.get_username()
        with _failing_open("clearing a user name's failures"):
            clear_user(username, device_for(request, username))
            release_attempt(getattr(request, "login_counted", None))
        remember_device(request, username, str(user.pk))


class _LockoutMessage:
    """Says "locked out" instead of "wrong password" when the backend refused."""

    request: HttpRequest | None

    def get_invalid_login_error(self) -> ValidationError:
        wait = getattr(self.request, "login_locked_for", 0)
        if wait:
            return ValidationError(lockout_message(wait), code="locked")
        return super().get_invalid_login_error()  # type: ignore[misc, no-any-return]

    @property
    def locked_for(self) -> float:
        return float(getattr(self.request, "login_locked_for", 0) or 0)


class ThrottledAuthenticationForm(_LockoutMessage, AuthenticationForm):
    """The login page's form."""


class ThrottledAdminAuthenticationForm(_LockoutMessage, AdminAuthenticationForm):
    """The admin's login form."""


class ThrottledLoginView(LoginView):
    """The login page: 429 with Retry-After while locked out, the form saying why."""

    form_class = ThrottledAuthenticationForm

    def form_invalid(self, form: Any) -> HttpResponse:
        response = super().form_invalid(form)
        if form.locked_for:
            response.status_code = 429
            response["Retry-After"] = str(math.ceil(form.locked_for))
        return response
