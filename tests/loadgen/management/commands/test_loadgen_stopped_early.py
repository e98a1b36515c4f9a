"""`manage.py loadgen` stopped before its load runs stops as it does once running.

Ctrl-C or SIGTERM while it issues its own tokens (the INSERT waiting on a
locked database) still revokes them; Ctrl-C while its Cortex clients are
still connecting still closes its clients and prints its totals.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from api.store.models import ApiToken
from loadgen.daphne_process import BASE_DIR, DaphneProcess
from tests.api.management.commands.locked_database import (
    interrupted_while_writing,
    migrated_database,
)
from tests.processes import ctrl_c_as_from_a_terminal

DEADLINE = 30.0


def loadgen_tokens(path: Path) -> list[tuple[str, int]]:
    """(name, revoked) of every token in the SQLite database at `path`."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        return list(db.execute(f"SELECT name, revoked FROM {ApiToken._meta.db_table} ORDER BY id"))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_load_generator_stopped_while_issuing_its_token_still_revokes_it(
    tmp_path: Path, signum: int
) -> None:
    env, path = migrated_database(tmp_path)
    # Nothing listens at the URL: it stops before connecting.
    done = interrupted_while_writing(["loadgen", "--url", "http://127.0.0.1:1"], env, path, signum)
    # The stop is taken once the token is noted as its own: it revokes it
    # and issues no other; exit 130 as for any Ctrl-C before its run.
    assert done.returncode == 130, done.stderr
    assert loadgen_tokens(path) == [("loadgen-frontend", 1)]
    assert "Traceback" not in done.stderr


def test_ctrl_c_while_the_grpc_clients_connect_stops_with_the_totals_as_when_running() -> None:
    # A gRPC address that takes the connection and never answers: the
    # Cortex clients wait for it (up to 10 s) after the websockets connect.
    with socket.create_server(("127.0.0.1", 0)) as silent, DaphneProcess(grpc=False) as server:
        silent.settimeout(DEADLINE)
        loadgen = subprocess.Popen(
            ctrl_c_as_from_a_terminal([
                sys.executable, str(BASE_DIR / "manage.py"), "loadgen", "--url", server.base_url,
                "--grpc", f"127.0.0.1:{silent.getsockname()[1]}", "--queriers", "1",
                "--frontends", "1", "--report-every", "60",
            ]),
            env=server.env, cwd=BASE_DIR, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            connection, _ = silent.accept()  # the websocket clients are connected by now
            with connection:
                loadgen.send_signal(signal.SIGINT)
                stdout, stderr = loadgen.communicate(timeout=DEADLINE)
        finally:
            if loadgen.poll() is None:
                loadgen.kill()
                loadgen.wait()
        revoked = loadgen_tokens(server.tmp / "db.sqlite3")
    assert loadgen.returncode == 0, stderr
    *_, totals, unanswered, last = stdout.splitlines()
    assert totals.startswith("websocket: sent 0 enqueued 0 results 0 "), totals
    assert unanswered == "loadgen: unanswered at the stop: websocket 0"
    assert last == "loadgen stopped"
    assert "Traceback" not in stderr
    assert revoked == [("loadgen-frontend", 1), ("loadgen-querier", 1)]
