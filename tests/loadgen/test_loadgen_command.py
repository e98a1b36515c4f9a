"""`manage.py loadgen` against real Daphne processes.

A lone scheduler restarted (SIGTERM, then started again on its port) is
reconnected and the load resumes with nothing lost; one gone for
`--give-up-after` seconds stops it in one line; SIGTERM (what `make demo`'s
Ctrl-C trap sends it) stops it as Ctrl-C does; one of two replicas killed
(`kill -9`) leaves the traffic to the other, and it carries on. Either way
it stops, the tokens it issued for itself are revoked.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import IO

from api.store.models import ApiToken
from loadgen.daphne_process import BASE_DIR, DaphneProcess
from tests.processes import ctrl_c_as_from_a_terminal

DEADLINE = 30.0
TOKEN = "qi_loadgen-two-replicas-test-token"


def run_loadgen(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """`manage.py loadgen ARGS` in `env`, its output piped."""
    return subprocess.Popen(
        ctrl_c_as_from_a_terminal([sys.executable, str(BASE_DIR / "manage.py"), "loadgen", *args]),
        # A fatal signal (SIGABRT, SIGSEGV) writes every thread's stack to stderr.
        env={**env, "PYTHONFAULTHANDLER": "1"}, cwd=BASE_DIR, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def start_loadgen(server: DaphneProcess, report_every: str, *args: str) -> subprocess.Popen[str]:
    """`manage.py loadgen ARGS` at 50 requests/s against `server`, its output piped."""
    return run_loadgen(
        server.env, "--url", server.base_url, "--rate", "50", "--report-every", report_every, *args
    )


@contextlib.contextmanager
def killed_after(loadgen: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    """`loadgen`, killed on the way out if a failed check left it running."""
    try:
        yield loadgen
    finally:
        if loadgen.poll() is None:
            loadgen.kill()
            loadgen.wait()


def test_a_lone_scheduler_restarted_is_reconnected_and_the_load_resumes_with_nothing_lost() -> None:
    with DaphneProcess(grpc=False) as server:
        loadgen = start_loadgen(server, "0.3", "--queriers", "2")
        out, err = Output(loadgen.stdout), Output(loadgen.stderr)
        with killed_after(loadgen):
            until(loadgen, err, lambda: out.reports() and ws_results(out.reports()[-1]), "results")
            server.stop()  # SIGTERM: the drain fails back what it holds, then closes with 1000
            until(loadgen, err, lambda: err.said(f"lost replica {server.base_url}"), "the loss")
            down = len(out.lines)
            until(loadgen, err, lambda: out.said("| reconnecting: next try in "), "a report")
            server.start()  # on the same port, with the same database
            until(loadgen, err, lambda: err.said(f"replica {server.base_url} is back"), "back")
            back = len(out.lines)
            until(loadgen, err, lambda: out.reports(back), "a report after the restart")
            then = ws_results(out.reports(back)[0])
            until(loadgen, err, lambda: ws_results(out.reports()[-1]) >= then + 20, "results again")
            loadgen.terminate()
            assert loadgen.wait(20) == 0
        revoked = own_tokens_revoked(server)
    assert any("stopping unless one is back within" in line for line in out.reports(down))
    *_, totals, unanswered, last = out.all()
    assert last == "loadgen stopped"
    assert totals.endswith(" | replicas 1/1 up, lost 0"), totals
    # Every request sent ended once (answered, failed back, refused) or is said unanswered.
    sent, ends = totals_of(totals)
    assert unanswered == f"loadgen: unanswered at the stop: websocket {sent - ends}"
    assert sent - ends >= 0
    assert not any("Traceback" in line for line in err.all())
    assert revoked == [("loadgen-frontend", 1), ("loadgen-querier", 1)]


def test_a_lone_scheduler_gone_for_the_give_up_time_stops_the_load_generator_in_one_line() -> None:
    with DaphneProcess(grpc=False) as server:
        loadgen = start_loadgen(server, "0.5", "--give-up-after", "1")
        out, err = Output(loadgen.stdout), Output(loadgen.stderr)
        with killed_after(loadgen):
            until(loadgen, err, out.reports, "a report")
            server.stop()  # SIGTERM, and not started again
            assert loadgen.wait(DEADLINE) == 1
        revoked = own_tokens_revoked(server)
    [line] = [line for line in err.all() if line.startswith("CommandError")]
    assert line.startswith(
        f"CommandError: the scheduler closed the connection ({server.base_url} not reachable for "
    )
    assert "; the last lost said: received 1000 (OK)" in line
    assert line.endswith("; stopping")
    assert err.said("stopping unless a replica is back within 1 s")
    assert not err.said("Traceback")
    assert revoked == [("loadgen-frontend", 1), ("loadgen-querier", 1)]


def own_tokens_revoked(server: DaphneProcess) -> list[tuple[str, int]]:
    """(name, revoked) of the tokens the load generator issued in the server's database."""
    with contextlib.closing(sqlite3.connect(server.tmp / "db.sqlite3")) as db:
        rows = db.execute(
            f"SELECT name, revoked FROM {ApiToken._meta.db_table} "
            "WHERE name LIKE 'loadgen-%' ORDER BY name"
        )
        return list(rows)


def test_sigterm_stops_the_load_generator_as_ctrl_c_does_with_its_totals_and_no_traceback() -> None:
    with DaphneProcess(grpc=False) as server:
        loadgen = start_loadgen(server, report_every="0.3")
        out, err = Output(loadgen.stdout), Output(loadgen.stderr)
        with killed_after(loadgen):
            until(loadgen, err, out.reports, "its first report")
            loadgen.terminate()
            assert loadgen.wait(20) == 0
        revoked = own_tokens_revoked(server)
    *_, totals, unanswered, last = out.all()
    assert last == "loadgen stopped"
    # The totals at the stop add up: every request sent is answered or said unanswered.
    sent, ends = totals_of(totals)
    assert unanswered == f"loadgen: unanswered at the stop: websocket {sent - ends}"
    assert not any("Traceback" in line for line in err.all())
    assert revoked == [("loadgen-frontend", 1), ("loadgen-querier", 1)]


class Output:
    """A child's stdout or stderr, line by line, read in a thread so the test can poll it."""

    def __init__(self, stream: IO[str] | None) -> None:
        assert stream is not None
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.append(line.rstrip("\n"))

    def all(self) -> list[str]:
        """Every line, once the child has closed the stream (exited)."""
        self._reader.join(10)
        return self.lines

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def reports(self, since: int = 0) -> list[str]:
        return [line for line in self.lines[since:] if line.startswith("websocket: ")]


def until(
    loadgen: subprocess.Popen[str], err: Output, check: Callable[[], object], what: str
) -> None:
    """Poll `check` while `loadgen` runs; fail with its stderr if it exits, or at DEADLINE."""
    deadline = time.monotonic() + DEADLINE
    while not check():
        # err.all(), not err.lines: the reader thread may not have drained the
        # pipe yet when poll() sees the exit (a SIGABRT's message was lost so).
        assert loadgen.poll() is None, f"loadgen exited {loadgen.returncode}:\n" + "\n".join(
            err.all()
        )
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def totals_of(report: str) -> tuple[int, int]:
    """(requests sent, requests ended: results, rejected, failed, errors) of a report line."""
    sent, *ends = map(int, re.findall(
        r"^websocket: sent (\d+) enqueued \d+ results (\d+) rejected (\d+) failed (\d+) "
        r"errors (\d+) ", report)[0])  # fmt: skip
    return sent, sum(ends)


def ws_results(report: str) -> int:
    """The websocket results of a report line."""
    found = re.search(r"^websocket: sent \d+ enqueued \d+ results (\d+)", report)
    assert found is not None, report
    return int(found.group(1))


def results(report: str) -> tuple[int, int]:
    """(websocket results, gRPC results) of a report line."""
    ws = re.search(r"^websocket: sent \d+ enqueued \d+ results (\d+)", report)
    grpc = re.search(r"\| grpc: sent \d+ results (\d+)", report)
    assert ws is not None and grpc is not None, report
    return int(ws.group(1)), int(grpc.group(1))


def seed_token(server: DaphneProcess) -> None:
    """The same editor token in each replica's own database, for `--token`. Written
    with sqlite3: a `manage.py shell` per replica would cost seconds of start-up."""
    row = ("loadgen-test", "editor", hashlib.sha256(TOKEN.encode()).hexdigest(), TOKEN[:8])
    now = str(datetime.now(UTC).replace(tzinfo=None))
    with contextlib.closing(sqlite3.connect(server.tmp / "db.sqlite3")) as db, db:
        db.execute(
            f"INSERT INTO {ApiToken._meta.db_table} "
            "(name, role, token_hash, prefix, created_at, revoked) VALUES (?, ?, ?, ?, ?, 0)",
            (*row, now),
        )


def test_one_of_two_replicas_killed_leaves_the_traffic_to_the_other_and_the_load_goes_on() -> None:
    servers = [DaphneProcess(), DaphneProcess()]
    try:
        with ThreadPoolExecutor(2) as pool:  # side by side: starting is most of this test
            list(pool.map(DaphneProcess.start, servers))
        for server in servers:
            seed_token(server)
        survivor, victim = servers
        args = ["--token", TOKEN, "--rate", "50", "--report-every", "0.3"]
        for server in servers:
            args += ["--url", server.base_url, "--grpc", f"127.0.0.1:{server.grpc_port}"]
        loadgen = run_loadgen(survivor.env, *args)
        out, err = Output(loadgen.stdout), Output(loadgen.stderr)

        def waiting(check: Callable[[], object], what: str) -> None:
            until(loadgen, err, check, what)

        with killed_after(loadgen):
            waiting(lambda: out.reports() and min(results(out.reports()[-1])) > 0, "results")
            assert victim.proc is not None
            victim.proc.kill()
            waiting(lambda: err.said(f"lost replica {victim.base_url}"), "the warning")
            # Counted from a report made after the loss: no result of the victim's in it.
            mark = len(out.lines)
            waiting(lambda: out.reports(mark), "a report after the loss")
            ws_then, grpc_then = results(out.reports(mark)[0])

            def through_the_survivor() -> bool:
                ws_now, grpc_now = results(out.reports(mark)[-1])
                return ws_now >= ws_then + 20 and grpc_now >= grpc_then + 3

            waiting(through_the_survivor, "results through the survivor")

            assert f"| replicas 1/2 up (down: {victim.base_url}), lost " in out.reports()[-1]
            assert loadgen.poll() is None
            loadgen.send_signal(signal.SIGINT)
            assert loadgen.wait(20) == 0
    finally:
        for server in servers:
            server.cleanup()
    assert out.all()[-1] == "loadgen stopped"
    assert not any("Traceback" in line for line in err.all())
