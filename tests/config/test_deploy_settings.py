"""Deployment settings from the environment: `check --deploy` is clean behind TLS."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parents[2]
STRONG_KEY = "k" * 20 + "-strong-enough-secret-key-for-the-deploy-check-0123456789"

BEHIND_TLS = {
    "SECRET_KEY": STRONG_KEY,
    "ALLOWED_HOSTS": "scheduler.example.com",
    "SESSION_COOKIE_SECURE": "1",
    "CSRF_COOKIE_SECURE": "1",
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "SECURE_HSTS_PRELOAD": "1",
    "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto: https",
}


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in BEHIND_TLS and k != "DEBUG"}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=BASE_DIR,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def settings_value(env: dict[str, str], name: str) -> str:
    code = f"from django.conf import settings; print(repr(settings.{name}))"
    result = run(env, "shell", "--no-imports", "-c", code)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_check_deploy_is_clean_with_the_tls_variables_set() -> None:
    result = run(BEHIND_TLS, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_without_them_check_deploy_names_what_is_missing() -> None:
    result = run({"SECRET_KEY": STRONG_KEY}, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode != 0
    for warning in ("W004", "W008", "W012", "W016"):  # HSTS, redirect, two cookies
        assert f"security.{warning}" in result.stdout + result.stderr


def test_the_proxy_header_is_read_as_django_wants_it() -> None:
    assert settings_value(BEHIND_TLS, "SECURE_PROXY_SSL_HEADER") == (
        "('HTTP_X_FORWARDED_PROTO', 'https')"
    )
    assert settings_value({}, "SECURE_PROXY_SSL_HEADER") == "None"
    assert settings_value(BEHIND_TLS, "SECURE_HSTS_SECONDS") == "31536000"
    assert settings_value({}, "SESSION_COOKIE_SECURE") == "False"


def test_the_simulation_variables_the_readme_lists_are_read() -> None:
    env = {
        "SIMULATION_WORKERS": "3",
        "SIMULATION_TIME_LIMIT_SECONDS": "1.5",
        "SIMULATION_IN_WORKER_PROCESS": "0",
    }
    for name, shown in (
        ("SIMULATION_WORKERS", "3"),
        ("SIMULATION_TIME_LIMIT_SECONDS", "1.5"),
        ("SIMULATION_IN_WORKER_PROCESS", "False"),
    ):
        assert settings_value(env, name) == shown
    assert settings_value({}, "SIMULATION_TIME_LIMIT_SECONDS") == "60.0"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SIMULATION_TIME_LIMIT_SECONDS", "0"),
        ("SIMULATION_TIME_LIMIT_SECONDS", "inf"),
        ("SIMULATION_WORKERS", "two"),
        ("SECURE_PROXY_SSL_HEADER", "https"),
        ("SECURE_PROXY_SSL_HEADER", "X Forwarded: https"),
        ("SECURE_HSTS_SECONDS", "a year"),
        ("LOGIN_LOCKOUT_SECONDS", "-5"),
        ("LOGIN_LOCKOUT_SECONDS", "\u00b2"),  # isdigit() says yes; int() raised
        # Read by the runtime later, these left a server whose /healthz
        # answered while its scheduler never started.
        ("TRAFFIC_SAMPLE_PER_TENANT", "abc"),
        ("TRAFFIC_SAMPLE_MAX_BYTES", "-1"),
        ("CONFIG_RECONCILE_SECONDS", "0"),
        ("GROUP_REJOIN_SECONDS", "soon"),
        ("SHUTDOWN_DRAIN_TIMEOUT", "-1"),
        ("QUEUE_PEER_TIMEOUT", "nan"),
        ("GRPC_PORT", "http"),
        ("GRPC_PORT", "70000"),
        ("DB_CONN_MAX_AGE", "forever"),
        ("GC_GEN0_THRESHOLD", "lots"),
        # Quietly taken as 1 before, or not read until later:
        ("GC_GEN0_THRESHOLD", "0"),
        ("SIMULATION_WORKERS", "0"),
        ("LOGIN_FAILURE_WINDOW_SECONDS", "0"),  # the throttle divided by it at a login
        ("GRPC_WRITE_BATCHING", "abc"),  # the gRPC door did not start, /healthz said ok
        ("LOG_LEVEL", "verbose"),  # logging's own traceback never named it
        # An on/off variable with a typo read as off: /metrics stayed open.
        ("METRICS_REQUIRE_LOGIN", "ture"),
        ("DEBUG", "maybe"),
        # The slow-reader guard's (config/slow_readers.py):
        ("WEBSOCKET_UNSENT_LIMIT_BYTES", "16M"),
        ("WEBSOCKET_UNSENT_LIMIT_BYTES", "100"),
        ("WEBSOCKET_UNSENT_LIMIT_BYTES", "-5"),
        ("WEBSOCKET_UNSENT_LIMIT_BYTES", "\u00b2"),
        ("WEBSOCKET_UNSENT_LIMIT_BYTES", str(2**40 + 1)),
        ("WEBSOCKET_SLOW_READER_SECONDS", "soon"),
        ("WEBSOCKET_SLOW_READER_SECONDS", "nan"),
        ("WEBSOCKET_SLOW_READER_SECONDS", "0"),
        ("WEBSOCKET_SLOW_READER_SECONDS", "0.05"),
        ("WEBSOCKET_SLOW_READER_SECONDS", "1e9"),
        # The gRPC door's idle limit (0 is allowed: off).
        ("GRPC_MAX_CONNECTION_IDLE_SECONDS", "5m"),
        ("GRPC_MAX_CONNECTION_IDLE_SECONDS", "-1"),
        ("GRPC_MAX_CONNECTION_IDLE_SECONDS", "nan"),
        ("GRPC_MAX_CONNECTION_IDLE_SECONDS", "inf"),
        # One login's inspector sockets: at least one.
        ("INSPECTOR_SOCKETS_PER_SESSION", "0"),
        ("INSPECTOR_SOCKETS_PER_SESSION", "many"),
        ("INSPECTOR_SOCKETS_PER_USER", "0"),
    ],
)
def test_a_bad_value_stops_start_up_naming_the_variable(name: str, value: str) -> None:
    result = run({name: value}, "check")
    assert result.returncode != 0
    # One line (tests/config/test_settings_refusals.py), not a traceback.
    assert f"error: {name}" in result.stderr and "Traceback" not in result.stderr


def test_the_slow_reader_guard_s_variables_are_read() -> None:
    env = {"WEBSOCKET_UNSENT_LIMIT_BYTES": "1048576", "WEBSOCKET_SLOW_READER_SECONDS": "2.5"}
    assert settings_value(env, "WEBSOCKET_UNSENT_LIMIT_BYTES") == "1048576"
    assert settings_value(env, "WEBSOCKET_SLOW_READER_SECONDS") == "2.5"
    assert settings_value({}, "WEBSOCKET_UNSENT_LIMIT_BYTES") == str(32 * 1024 * 1024)
    assert settings_value({}, "WEBSOCKET_SLOW_READER_SECONDS") == "10.0"


def test_on_off_and_log_level_values_are_read_in_any_case() -> None:
    assert settings_value({"METRICS_REQUIRE_LOGIN": "YES"}, "METRICS_REQUIRE_LOGIN") == "True"
    assert settings_value({"METRICS_REQUIRE_LOGIN": "Off"}, "METRICS_REQUIRE_LOGIN") == "False"
    assert settings_value({"LOG_LEVEL": "debug"}, "LOG_LEVEL") == "'DEBUG'"
    assert settings_value({"GRPC_WRITE_BATCHING": "0"}, "GRPC_WRITE_BATCHING") == "0"
