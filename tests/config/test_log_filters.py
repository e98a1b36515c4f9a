"""Requests Django refuses as suspicious log one WARNING line each, not a traceback."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
from pathlib import Path

from config.log_filters import ClientFaults

BASE_DIR = Path(__file__).resolve().parents[2]


def _record(name: str, level: int) -> logging.LogRecord:
    try:
        raise ValueError("boom")
    except ValueError:
        return logging.LogRecord(name, level, __file__, 1, "Invalid %s", ("host",), sys.exc_info())


def test_a_refused_requests_record_becomes_one_warning_line_naming_the_exception() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(ClientFaults())

    handler.handle(_record("django.security.DisallowedHost", logging.ERROR))

    assert out.getvalue() == (
        "WARNING django.security.DisallowedHost: DisallowedHost: Invalid host\n"
    )


def test_other_records_keep_their_level_and_traceback() -> None:
    record = _record("django.request", logging.ERROR)
    assert ClientFaults().filter(record)
    assert record.levelno == logging.ERROR and record.exc_info is not None


def test_the_servers_log_says_a_foreign_host_in_one_line() -> None:
    # Through the real settings' logging, as a refused request reaches it.
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'; "
        "django.setup(); from django.test import Client; "
        "print(Client(HTTP_HOST='evil.example').get('/healthz').status_code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=BASE_DIR, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "400", done.stderr
    lines = [line for line in done.stderr.splitlines() if "DisallowedHost" in line]
    assert len(lines) == 1 and " WARNING django.security.DisallowedHost: " in lines[0]
    assert "Traceback" not in done.stderr
