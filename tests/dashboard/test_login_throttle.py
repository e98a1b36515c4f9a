"""Login throttling: repeated wrong passwords lock out a user name or an address for a while."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.test import Client, RequestFactory, override_settings

from dashboard import login_throttle

pytestmark = pytest.mark.django_db

RIGHT = "pw-victor-123"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[FakeClock]:
    settings.LOGIN_FAILURE_LIMIT = 5
    settings.LOGIN_FAILURE_LIMIT_PER_ADDRESS = 20
    settings.LOGIN_FAILURE_WINDOW_SECONDS = 900
    settings.LOGIN_LOCKOUT_SECONDS = 900
    # A hundred logins with the real hasher would take a minute.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    fake = FakeClock()
    monkeypatch.setattr(login_throttle, "clock", fake)
    cache.clear()
    yield fake
    cache.clear()


def login(username: str, password: str, address: str = "10.0.0.1") -> Any:
    client = Client(REMOTE_ADDR=address)
    response = client.post("/login/", {"username": username, "password": password})
    response.logged_in = "_auth_user_id" in client.session
    return response


def test_the_right_password_is_refused_during_a_lockout_with_a_clear_message(
    viewer: User, clock: FakeClock
) -> None:
    for _ in range(4):
        assert login("victor", "wrong").status_code == 200
    assert login("victor", RIGHT).logged_in  # four failures: still allowed
    for _ in range(5):
        login("victor", "wrong")
    refused = login("victor", RIGHT)
    assert refused.status_code == 429 and not refused.logged_in
    assert refused["Retry-After"] == "900"
    text = refused.content.decode()
    assert "Too many failed logins" in text and "15 minutes" in text
    assert "even with the right password" in text


def test_the_lockout_expires(viewer: User, clock: FakeClock) -> None:
    for _ in range(5):
        login("victor", "wrong")
    clock.now += 600
    refused = login("victor", RIGHT)
    assert refused.status_code == 429 and "5 minutes" in refused.content.decode()
    clock.now += 301
    assert login("victor", RIGHT).logged_in


def test_attempts_during_a_lockout_do_not_extend_it(viewer: User, clock: FakeClock) -> None:
    for _ in range(5):
        login("victor", "wrong")
    clock.now += 800
    for _ in range(10):
        assert login("victor", "wrong").status_code == 429
    clock.now += 101
    assert login("victor", RIGHT).logged_in


def test_user_names_are_counted_from_every_address(viewer: User, clock: FakeClock) -> None:
    for n in range(5):
        login("victor", "wrong", address=f"10.0.1.{n}")
    assert login("victor", RIGHT, address="10.9.9.9").status_code == 429


def test_another_accounts_login_in_another_case_does_not_clear_a_user_names_count(
    viewer: User, clock: FakeClock
) -> None:
    # Django's user names are case-sensitive: "Victor" is someone else, whose
    # logins once cleared the count "victor" shared with him.
    User.objects.create_user("Victor", password="pw-other-victor")
    for round_no in range(3):
        for n in range(2):
            login("victor", "wrong", address=f"10.0.{round_no}.{n}")
        assert login("Victor", "pw-other-victor", address="10.0.9.9").logged_in
    assert login("victor", RIGHT, address="10.9.9.9").status_code == 429


def test_one_address_is_locked_out_after_trying_many_user_names(
    viewer: User, clock: FakeClock
) -> None:
    for n in range(20):
        login(f"guess-{n}", "wrong", address="10.0.0.66")
    assert login("victor", RIGHT, address="10.0.0.66").status_code == 429
    assert login("victor", RIGHT, address="10.0.0.67").logged_in


def test_a_burst_straddling_a_window_edge_is_still_counted(viewer: User, clock: FakeClock) -> None:
    clock.now = 900 * 2_000_000 - 10  # ten seconds before a bucket edge
    for _ in range(3):
        login("victor", "wrong")
    clock.now += 20
    for _ in range(2):
        login("victor", "wrong")
    assert login("victor", RIGHT).status_code == 429


def test_failures_spread_over_more_than_two_windows_do_not_lock(
    viewer: User, clock: FakeClock
) -> None:
    for _ in range(3):
        for _ in range(2):
            login("victor", "wrong")
        clock.now += 1000
    assert login("victor", RIGHT).logged_in


def test_a_successful_login_clears_the_user_names_count(viewer: User, clock: FakeClock) -> None:
    for _ in range(4):
        login("victor", "wrong")
    assert login("victor", RIGHT).logged_in
    for _ in range(4):
        login("victor", "wrong")
    assert login("victor", RIGHT).logged_in


def test_the_admin_login_is_throttled_too(clock: FakeClock) -> None:
    User.objects.create_superuser("root", password="pw-root-12345")
    client = Client(REMOTE_ADDR="10.0.0.5")
    for _ in range(5):
        client.post("/admin/login/", {"username": "root", "password": "wrong"})
    response = client.post("/admin/login/", {"username": "root", "password": "pw-root-12345"})
    assert "_auth_user_id" not in client.session
    assert "Too many failed logins" in response.content.decode()


def test_a_login_without_a_request_is_not_throttled(viewer: User, clock: FakeClock) -> None:
    for _ in range(5):
        login("victor", "wrong")
    assert authenticate(username="victor", password=RIGHT) == viewer


@pytest.fixture
def redis_down(tmp_path: Path) -> Iterator[None]:
    """The cache is Redis, at a socket nobody listens on: every call raises ConnectionError."""
    location = f"unix://{tmp_path}/redis.sock"
    backend = "django.core.cache.backends.redis.RedisCache"
    with override_settings(CACHES={"default": {"BACKEND": backend, "LOCATION": location}}):
        yield


def test_while_redis_is_down_logins_go_on_unthrottled_with_a_warning(
    viewer: User, redis_down: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="dashboard.login_throttle")
    for _ in range(6):
        refused = login("victor", "wrong")
        assert refused.status_code == 200 and not refused.logged_in
        assert "do not match an active account" in refused.content.decode()
    assert login("victor", RIGHT).logged_in
    assert caplog.records and all(r.exc_info is None for r in caplog.records)
    assert "cache unreachable" in caplog.records[0].getMessage()


def test_of_attempts_sent_at_once_only_the_limit_get_their_password_checked(
    viewer: User, clock: FakeClock
) -> None:
    # Each attempt passes the backend before any password is checked, as 25
    # logins racing on several workers do: all 25 used to be checked.
    backend = login_throttle.LoginThrottleBackend()
    checked = 0
    for n in range(25):
        request = RequestFactory().post("/login/", REMOTE_ADDR=f"10.0.3.{n}")
        try:
            backend.authenticate(request, username="victor", password="wrong")
        except PermissionDenied:
            continue
        checked += 1
    assert checked == 5
    assert login("victor", RIGHT).status_code == 429


def test_after_a_lockout_the_user_name_has_its_whole_count_again(
    viewer: User, clock: FakeClock
) -> None:
    for _ in range(5):
        login("victor", "wrong")
    clock.now += 901
    for _ in range(4):
        assert login("victor", "wrong").status_code == 200
    assert login("victor", RIGHT).logged_in


def test_logins_that_work_do_not_use_up_their_addresses_count(
    viewer: User, clock: FakeClock
) -> None:
    for _ in range(25):
        assert login("victor", RIGHT, address="10.0.0.70").logged_in
    for _ in range(19):
        login("nobody", "wrong", address="10.0.0.70")
    assert login("victor", RIGHT, address="10.0.0.70").logged_in
