"""scheduler_core is plain Python: importing all of it loads no Django."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import importlib, json, pkgutil, sys
import scheduler_core
names = [m.name for m in pkgutil.walk_packages(scheduler_core.__path__, "scheduler_core.")]
for name in names:
    importlib.import_module(name)
web = ("django", "channels", "rest_framework")
loaded = sorted(m for m in sys.modules if m.split(".")[0] in web)
print(json.dumps({"modules": names, "django": loaded}))
"""


def test_every_scheduler_core_module_imports_in_a_clean_interpreter_without_django() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "scheduler_core.queue" in result["modules"]
    assert "scheduler_core.runtime" in result["modules"]
    assert result["django"] == []
