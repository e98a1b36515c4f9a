"""`manage.py loadgen` whose token is revoked while it runs says that, not "a restart"."""

from __future__ import annotations

import subprocess
import sys
import time

from loadgen.daphne_process import BASE_DIR, DaphneProcess

DEADLINE = 30.0


def test_a_token_revoked_under_the_load_generator_stops_it_naming_the_token() -> None:
    with DaphneProcess(grpc=False) as server:
        loadgen = subprocess.Popen(
            [sys.executable, str(BASE_DIR / "manage.py"), "loadgen", "--url", server.base_url,
             "--rate", "20", "--report-every", "0.3"],
            env=server.env, cwd=BASE_DIR, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            assert loadgen.stdout is not None
            deadline = time.monotonic() + DEADLINE
            while not loadgen.stdout.readline().startswith("websocket: sent"):
                assert time.monotonic() < deadline and loadgen.poll() is None, "no report"
            # What an operator rotating tokens does; the server closes its sockets
            # (4001) at its next reconcile.
            server.manage("revoke_token", "--name", "loadgen-querier")
            _, stderr = loadgen.communicate(timeout=DEADLINE)
        finally:
            if loadgen.poll() is None:
                loadgen.kill()
                loadgen.wait()
    assert loadgen.returncode == 1
    [line] = [line for line in stderr.splitlines() if line.startswith("CommandError")]
    assert line.startswith("CommandError: the scheduler closed the connection (received 4001")
    assert line.endswith("(its token was revoked or has expired); stopping")
    assert "Traceback" not in stderr
