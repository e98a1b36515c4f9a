"""Settings refused at start, in one line naming the variable.

Each value here was once taken: `manage.py check` passed and then the server
failed as it started (a traceback naming no variable), or started and
answered /healthz while its scheduler runtime never did (a Redis URL
redis-py refuses), or quietly did something else (an empty VAR_DIR was the
current directory). A refusal is `error: <message>` on stderr, status 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env_checks import env_int, env_seconds, var_dir
from tests.config.test_deploy_settings import BASE_DIR, settings_value

# Stands for a password in a URL: a refusal must not print it.
PASSWORD = "hunter2-not-for-logs"

# Variables the tests' own environment might set, which would hide the default.
SET_HERE = ("DEBUG", "SECRET_KEY", "REDIS_URL", "DATABASE_URL", "VAR_DIR", "STATIC_ROOT")


def start(args: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in SET_HERE}
    return subprocess.run(
        [sys.executable, *args],
        cwd=BASE_DIR,
        env={
            **clean,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "SECRET_KEY": "k" * 50,
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "VAR_DIR": str(tmp_path / "var"),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_refused_in_one_line(result: subprocess.CompletedProcess[str], starts: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.strip().startswith(f"error: {starts}"), result.stderr


@pytest.mark.parametrize(
    ("name", "value"),
    [
        # redis-py refused these only as the runtime started: /healthz 200, every socket 403.
        ("REDIS_URL", "garbage"),
        ("REDIS_URL", f"http://:{PASSWORD}@x"),
        ("REDIS_URL", f"redis://:{PASSWORD}@h:abc/0"),
        ("REDIS_URL", "redis:localhost"),
        # Server start crashed with a traceback naming none of them:
        ("GC_GEN0_THRESHOLD", str(2**31)),  # OverflowError in gc.set_threshold
        ("SECURE_REDIRECT_EXEMPT", "^healthz$,(["),  # re.error in the security middleware
        ("DATABASE_URL", "garbage"),
        ("DATABASE_URL", f"postgres://u:{PASSWORD}@h:abc/db"),
        ("DATABASE_URL", f"postgres://u:{PASSWORD}@h:99999/db"),
        ("VAR_DIR", "/proc/nonexist"),  # FileNotFoundError from every command
        # A microsecond's period kept an idle server busy.
        ("CONFIG_RECONCILE_SECONDS", "0.000001"),
        ("GROUP_REJOIN_SECONDS", "0.05"),
        ("INSPECTOR_LOGIN_RECHECK_SECONDS", "0.01"),
        ("QUEUE_PEER_TIMEOUT", "0"),
        ("QUEUE_PEER_TIMEOUT", "0.0999"),
        # Read as off without a word: the relay the loadtest measures against missing.
        ("LOADTEST_RELAY", "ture"),
    ],
)
def test_a_value_the_server_could_not_start_with_stops_check_in_one_line_naming_it(
    name: str, value: str, tmp_path: Path
) -> None:
    result = start(["manage.py", "check"], {name: value}, tmp_path)
    assert_refused_in_one_line(result, name)
    assert PASSWORD not in result.stderr


def test_redis_urls_redis_py_reads_are_taken_as_they_are(tmp_path: Path) -> None:
    for url in ("redis://127.0.0.1:6379/0", "rediss://:pw@cache.example:6380/1", "unix:///r.sock"):
        assert settings_value({"REDIS_URL": url}, "REDIS_URL") == repr(url)
    assert_refused_in_one_line(
        start(["manage.py", "check"], {"REDIS_URL": "http://x"}, tmp_path), "REDIS_URL"
    )


def test_a_refusal_of_a_project_command_is_one_line_not_a_key_error(tmp_path: Path) -> None:
    env = {"DEBUG": "ture"}
    result = start(["manage.py", "issue_token", "x", "--role", "viewer"], env, tmp_path)
    assert_refused_in_one_line(result, "DEBUG must be one of 1/true/yes/on")
    assert "KeyError" not in result.stderr


def test_a_refusal_is_one_line_with_the_settings_named_by_the_settings_option(
    tmp_path: Path,
) -> None:
    args = ["manage.py", "check", "--settings", "tests.e2e.quick_hash_settings"]
    result = start(args, {"DJANGO_SETTINGS_MODULE": "no.such.settings", "DEBUG": "ture"}, tmp_path)
    assert_refused_in_one_line(result, "DEBUG must be one of")


def test_config_serve_refuses_a_setting_in_one_line(tmp_path: Path) -> None:
    result = start(["-m", "config.serve"], {"GC_GEN0_THRESHOLD": str(2**31)}, tmp_path)
    assert_refused_in_one_line(result, "GC_GEN0_THRESHOLD must be a whole number from 1 to")


def test_an_improperly_configured_from_elsewhere_keeps_its_traceback_but_ours_do_not(
    tmp_path: Path,
) -> None:
    (tmp_path / "elsewhere_settings.py").write_text(
        "from config.settings import *  # noqa: F403\n"
        "from django.core.exceptions import ImproperlyConfigured\n"
        "raise ImproperlyConfigured('raised by a module of its own')\n"
    )
    env = {
        "DJANGO_SETTINGS_MODULE": "elsewhere_settings",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(BASE_DIR)]),
    }
    for args in (["manage.py", "check"], ["-m", "config.serve"]):
        elsewhere = start(args, env, tmp_path)
        assert elsewhere.returncode == 1
        assert "Traceback" in elsewhere.stderr
        assert "ImproperlyConfigured: raised by a module of its own" in elsewhere.stderr
        ours = start(args, {**env, "LOG_LEVEL": "verbose"}, tmp_path)
        assert_refused_in_one_line(ours, "LOG_LEVEL must be one of")


def test_an_empty_value_is_the_default() -> None:
    empty = {
        "VAR_DIR": "",
        "STATIC_ROOT": " ",
        "ALLOWED_HOSTS": " , ",
        # Set blank, these bound the gRPC door to every interface, put every
        # Redis key outside its namespace, and redirected health probes.
        "GRPC_HOST": "",
        "CHANNEL_PREFIX": " ",
        "SECURE_REDIRECT_EXEMPT": "",
    }
    assert settings_value(empty, "VAR_DIR") == repr(BASE_DIR / "var")
    assert settings_value(empty, "STATIC_ROOT") == repr(BASE_DIR / "staticfiles")
    assert settings_value(empty, "ALLOWED_HOSTS") == "['127.0.0.1', 'localhost']"
    assert settings_value(empty, "GRPC_HOST") == "'127.0.0.1'"
    assert settings_value(empty, "CHANNEL_PREFIX") == "'asgi'"
    assert settings_value(empty, "SECURE_REDIRECT_EXEMPT") == "['^healthz$']"


def test_periods_are_at_least_a_tenth_of_a_second_and_the_tests_own_are_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 0.5 is what loadgen's DaphneProcess sets; 1 the service tests' replicas.
    for raw, seconds in (("0.1", 0.1), ("0.5", 0.5), ("1", 1.0)):
        monkeypatch.setenv("CONFIG_RECONCILE_SECONDS", raw)
        assert env_seconds("CONFIG_RECONCILE_SECONDS", 5.0, least=0.1) == seconds
    for raw in ("0.09", "0", "-1", "nan", "inf"):
        monkeypatch.setenv("CONFIG_RECONCILE_SECONDS", raw)
        with pytest.raises(ImproperlyConfigured, match="^CONFIG_RECONCILE_SECONDS .* at least 0.1"):
            env_seconds("CONFIG_RECONCILE_SECONDS", 5.0, least=0.1)


def test_a_whole_number_may_have_an_upper_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GC_GEN0_THRESHOLD", str(2**31 - 1))
    assert env_int("GC_GEN0_THRESHOLD", 1, least=1, most=2**31 - 1) == 2**31 - 1
    monkeypatch.setenv("GC_GEN0_THRESHOLD", str(2**31))
    with pytest.raises(ImproperlyConfigured, match="^GC_GEN0_THRESHOLD .* from 1 to 2147483647"):
        env_int("GC_GEN0_THRESHOLD", 1, least=1, most=2**31 - 1)


def test_a_var_dir_that_cannot_be_made_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("VAR_DIR", str(tmp_path / "a-file" / "var"))
    with pytest.raises(ImproperlyConfigured, match="^VAR_DIR: cannot create the directory"):
        var_dir("VAR_DIR", tmp_path)
    monkeypatch.setenv("VAR_DIR", "  ")
    assert var_dir("VAR_DIR", tmp_path / "default") == tmp_path / "default"
    assert (tmp_path / "default").is_dir()
