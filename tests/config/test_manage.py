"""manage.py: Ctrl-C stops any command with the shell's 130, not a traceback.

The process sends itself SIGINT at a fixed point, so the Ctrl-C lands where
the test says, with no timing involved.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.processes import ctrl_c_as_from_a_terminal

BASE_DIR = Path(__file__).resolve().parents[2]
SELF_INTERRUPT = "import os, signal; os.kill(os.getpid(), signal.SIGINT)"


def manage(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ctrl_c_as_from_a_terminal([sys.executable, "manage.py", *args]),
        cwd=BASE_DIR,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ctrl_c_while_django_loads_exits_130_without_a_traceback(tmp_path: Path):
    # Settings that are interrupted as they load: Django's start-up.
    (tmp_path / "interrupted_settings.py").write_text(
        f"from config.settings import *  # noqa: F403\n{SELF_INTERRUPT}\n"
    )
    pythonpath = os.pathsep.join([str(tmp_path), str(BASE_DIR)])
    result = manage(
        "check", env={"DJANGO_SETTINGS_MODULE": "interrupted_settings", "PYTHONPATH": pythonpath}
    )
    assert result.returncode == 130
    assert "Traceback" not in result.stderr
    assert "KeyboardInterrupt" not in result.stderr


def test_ctrl_c_in_a_command_that_does_not_handle_it_exits_130_without_a_traceback():
    result = manage("shell", "--no-imports", "-c", SELF_INTERRUPT)
    assert result.returncode == 130
    assert "Traceback" not in result.stderr
    assert "KeyboardInterrupt" not in result.stderr
