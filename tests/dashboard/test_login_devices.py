"""Device cookies: a browser a user logged in from is not held by that user name's lockout."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.core import signing
from django.test import Client

from dashboard import login_throttle
from dashboard.login_devices import COOKIE, MAX_AGE

# The throttle's fake clock and clean cache, as in the throttle's own tests.
from tests.dashboard.test_login_throttle import RIGHT, FakeClock, clock  # noqa: F401

pytestmark = pytest.mark.django_db

SALT = "dashboard.login_devices"


def attempt(client: Client, password: str, username: str = "victor") -> Any:
    response = client.post("/login/", {"username": username, "password": password})
    response.logged_in = "_auth_user_id" in client.session
    # Not client.logout(): it forgets every cookie, the device's too.
    client.cookies.pop(django_settings.SESSION_COOKIE_NAME, None)
    return response


def fake_clock() -> FakeClock:
    """The throttle's clock, which the `clock` fixture replaced by a fake one."""
    assert isinstance(login_throttle.clock, FakeClock)
    return login_throttle.clock


def known_browser(address: str = "10.0.0.1") -> Client:
    """A browser that victor has logged in from (it holds the device cookie)."""
    browser = Client(REMOTE_ADDR=address)
    assert attempt(browser, RIGHT).logged_in
    assert browser.cookies[COOKIE].value
    return browser


def signed_long_ago(payload: object) -> str:
    """A cookie value signed as genuine ones are, a year and a second ago."""
    then = time.time() - MAX_AGE - 1
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(signing.time, "time", lambda: then)
        return signing.dumps(payload, salt=SALT)


def lock_out_victor_from(address: str) -> None:
    stranger = Client(REMOTE_ADDR=address)
    for _ in range(5):
        attempt(stranger, "wrong")
    assert attempt(stranger, RIGHT).status_code == 429


def test_strangers_who_lock_a_user_name_out_do_not_lock_out_a_browser_it_logged_in_from(
    viewer: User,
) -> None:
    browser = known_browser()
    lock_out_victor_from("203.0.113.9")
    assert attempt(browser, RIGHT).logged_in
    # ...and its login does not lift the lockout strangers are under.
    assert attempt(Client(REMOTE_ADDR="203.0.113.10"), RIGHT).status_code == 429


def test_wrong_passwords_from_a_known_browser_lock_out_only_that_browser(viewer: User) -> None:
    browser, other = known_browser(), known_browser("10.0.0.2")
    for _ in range(5):
        assert not attempt(browser, "wrong").logged_in
    refused = attempt(browser, RIGHT)
    assert refused.status_code == 429 and refused["Retry-After"] == "900"
    assert attempt(other, RIGHT).logged_in
    assert attempt(Client(REMOTE_ADDR="10.0.0.3"), RIGHT).logged_in
    fake_clock().now += 901
    assert attempt(browser, RIGHT).logged_in


def test_a_login_from_a_known_browser_clears_its_count_and_keeps_its_device(viewer: User) -> None:
    browser = known_browser()
    first = browser.cookies[COOKIE].value
    for _ in range(4):
        attempt(browser, "wrong")
    assert attempt(browser, RIGHT).logged_in
    for _ in range(4):
        attempt(browser, "wrong")
    assert attempt(browser, RIGHT).logged_in
    device = signing.loads(browser.cookies[COOKIE].value, salt=SALT)["d"]
    assert device == signing.loads(first, salt=SALT)["d"]


@pytest.mark.parametrize(
    "cookie",
    [
        pytest.param(lambda i: signing.dumps({"u": "alice", "i": i, "d": "x"}, salt=SALT),
                     id="another user's"),
        pytest.param(lambda i: signing.dumps({"u": "victor", "i": i, "d": "x"}, salt="elsewhere"),
                     id="signed for something else"),
        pytest.param(lambda i: signing.dumps({"u": "victor", "i": i, "d": "x"},
                                             key="not-our-key", salt=SALT), id="another key's"),
        pytest.param(lambda i: signing.dumps(["victor", i, "x"], salt=SALT),
                     id="of another shape"),
        pytest.param(lambda i: signing.dumps({"u": "victor", "i": i, "d": ""}, salt=SALT),
                     id="without a device"),
        pytest.param(lambda i: signing.dumps({"u": "victor", "d": "x"}, salt=SALT),
                     id="without a user ID (from before cookies had one)"),
        pytest.param(lambda i: signing.dumps({"u": "victor", "i": int(i), "d": "x"}, salt=SALT),
                     id="with a user ID of another type"),
        pytest.param(lambda i: f"victor:{i}:x", id="unsigned"),
        pytest.param(lambda i: signed_long_ago({"u": "victor", "i": i, "d": "x"}),
                     id="over a year old"),
    ],
)  # fmt: skip
def test_a_cookie_that_is_not_a_genuine_one_for_this_user_counts_for_nothing(
    viewer: User, cookie: Any
) -> None:
    lock_out_victor_from("203.0.113.9")
    forger = Client(REMOTE_ADDR="203.0.113.11")
    forger.cookies[COOKIE] = cookie(str(viewer.pk))
    assert attempt(forger, RIGHT).status_code == 429


def test_the_cookie_is_http_only_same_site_and_secure_when_sessions_are(
    viewer: User, settings: Any
) -> None:
    cookie = known_browser().cookies[COOKIE]
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and not cookie["secure"]
    assert cookie["max-age"] == MAX_AGE and cookie["path"] == "/"
    settings.SESSION_COOKIE_SECURE = True
    assert known_browser().cookies[COOKIE]["secure"]


def test_an_admin_login_leaves_the_cookie_too() -> None:
    User.objects.create_superuser("ada", password="pw-ada-123")
    browser = Client(REMOTE_ADDR="10.0.0.1")
    response = browser.post(
        "/admin/login/?next=/admin/", {"username": "ada", "password": "pw-ada-123"}
    )
    assert response.status_code == 302 and browser.cookies[COOKIE].value


def test_a_browser_that_logged_in_as_the_same_name_in_another_case_is_a_stranger(
    viewer: User,
) -> None:
    # "Victor" is another account: his browsers must not spread guesses at
    # victor's password over devices of their own.
    User.objects.create_user("Victor", password="pw-other-victor")
    his = Client(REMOTE_ADDR="203.0.113.20")
    assert attempt(his, "pw-other-victor", username="Victor").logged_in
    lock_out_victor_from("203.0.113.9")
    assert attempt(his, RIGHT).status_code == 429


def test_a_browser_that_logged_in_as_a_deleted_user_is_a_stranger_to_a_new_one_of_that_name(
    viewer: User,
) -> None:
    browser = known_browser()
    viewer.delete()
    User.objects.create_user("victor", password=RIGHT)
    lock_out_victor_from("203.0.113.9")

    assert attempt(browser, RIGHT).status_code == 429


def test_a_cookie_signed_as_ours_for_this_user_is_the_browser_it_names(viewer: User) -> None:
    # What the forgeries above lack: made as a login makes it, it is honoured.
    lock_out_victor_from("203.0.113.9")
    browser = Client(REMOTE_ADDR="203.0.113.11")
    browser.cookies[COOKIE] = signing.dumps(
        {"u": "victor", "i": str(viewer.pk), "d": "x"}, salt=SALT
    )

    assert attempt(browser, RIGHT).logged_in
