"""The session and CSRF cookies: HttpOnly session, SameSite, Secure whenever HTTPS is configured."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings

from tests.config.test_deploy_settings import settings_value

HTTPS_SIGNS = [
    {"SECURE_SSL_REDIRECT": "1"},
    {"SECURE_HSTS_SECONDS": "3600"},
    {"SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto: https"},
]


@pytest.mark.parametrize("env", HTTPS_SIGNS, ids=lambda env: next(iter(env)))
def test_any_https_setting_makes_both_cookies_secure_by_itself(env: dict[str, str]) -> None:
    assert settings_value(env, "SESSION_COOKIE_SECURE") == "True"
    assert settings_value(env, "CSRF_COOKIE_SECURE") == "True"


def test_an_explicit_0_still_turns_them_off_behind_https() -> None:
    env = {"SECURE_SSL_REDIRECT": "1", "SESSION_COOKIE_SECURE": "0", "CSRF_COOKIE_SECURE": "0"}
    assert settings_value(env, "SESSION_COOKIE_SECURE") == "False"
    assert settings_value(env, "CSRF_COOKIE_SECURE") == "False"


def test_plain_http_keeps_them_usable_without_https() -> None:
    assert settings_value({}, "SESSION_COOKIE_SECURE") == "False"


def test_the_session_cookie_is_hidden_from_scripts_and_not_sent_cross_site() -> None:
    assert django_settings.SESSION_COOKIE_HTTPONLY is True
    assert django_settings.SESSION_COOKIE_SAMESITE == "Lax"
    assert django_settings.CSRF_COOKIE_SAMESITE == "Lax"
