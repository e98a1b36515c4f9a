"""`manage.py loadgen` against a real Daphne: a scheduler that shuts down stops it in one line."""

from __future__ import annotations

import subprocess
import sys
import time

from loadgen.daphne_process import BASE_DIR, DaphneProcess


def test_a_scheduler_shutting_down_stops_the_load_generator_with_a_clear_error() -> None:
    with DaphneProcess(grpc=False) as server:
        loadgen = subprocess.Popen(
            [sys.executable, str(BASE_DIR / "manage.py"), "loadgen", "--url", server.base_url,
             "--rate", "50", "--report-every", "0.5"],
            env=server.env, cwd=BASE_DIR, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            assert loadgen.stdout is not None
            deadline = time.monotonic() + 60
            while "websocket: sent" not in loadgen.stdout.readline():
                assert time.monotonic() < deadline and loadgen.poll() is None, "no report"
            server.stop()  # SIGTERM: the drain closes every socket
            _, stderr = loadgen.communicate(timeout=30)
        finally:
            if loadgen.poll() is None:
                loadgen.kill()
    assert loadgen.returncode == 1
    assert "the scheduler closed the connection" in stderr
    assert "Traceback" not in stderr
