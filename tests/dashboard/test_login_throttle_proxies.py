"""Login throttling behind proxies: X-Forwarded-For is believed only from trusted ones."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.config.test_deploy_settings import BASE_DIR

# The throttle's fake clock and clean cache, as in the throttle's own tests.
from tests.dashboard.test_login_throttle import RIGHT, clock  # noqa: F401

pytestmark = pytest.mark.django_db

PROXY = "10.0.0.5"


def login(username: str, password: str, peer: str, forwarded: str | None = None) -> Any:
    extra = {"REMOTE_ADDR": peer}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    client = Client(**extra)
    response = client.post("/login/", {"username": username, "password": password})
    response.logged_in = "_auth_user_id" in client.session
    return response


def spray(peer: str, forwarded: str) -> None:
    """Twenty wrong passwords, each for another user name and claiming another address."""
    for n in range(20):
        login(f"guess-{n}", "wrong", peer, f"198.18.0.{n}, {forwarded}".strip(", "))


def test_a_client_that_writes_x_forwarded_for_itself_is_still_counted_by_its_peer_address(
    viewer: User,
) -> None:
    spray("203.0.113.7", "")
    assert login("victor", RIGHT, "203.0.113.7", "198.18.1.1").status_code == 429


def test_behind_a_trusted_proxy_the_address_the_proxy_appended_is_counted(
    viewer: User, settings: Any
) -> None:
    settings.LOGIN_TRUSTED_PROXIES = ["10.0.0.0/24"]
    # The proxy appends the address it saw to whatever the client sent.
    spray(PROXY, "203.0.113.7")
    assert login("victor", RIGHT, PROXY, "198.18.1.1, 203.0.113.7").status_code == 429
    # Another client behind the same proxy is not locked out with it.
    assert login("victor", RIGHT, PROXY, "198.51.100.9").logged_in


def test_through_a_chain_of_trusted_proxies_the_first_untrusted_from_the_right_counts(
    viewer: User, settings: Any
) -> None:
    settings.LOGIN_TRUSTED_PROXIES = ["10.0.0.0/24", "192.168.7.2"]
    spray(PROXY, "203.0.113.7, 192.168.7.2")
    assert login("victor", RIGHT, PROXY, "203.0.113.7, 192.168.7.2").status_code == 429
    assert login("victor", RIGHT, PROXY, "198.51.100.9, 192.168.7.2").logged_in


def test_a_bad_trusted_proxy_stops_start_up_naming_the_variable() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=BASE_DIR,
        env={
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "LOGIN_TRUSTED_PROXIES": "10.0.0.0/8,nginx",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "LOGIN_TRUSTED_PROXIES" in result.stderr and "'nginx'" in result.stderr
