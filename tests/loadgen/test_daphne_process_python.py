"""`DaphneProcess.run_python`: one long-lived Django process per server, as `manage.py shell -c`.

Against a real Daphne (module-scoped) where the server must see the writes;
the rest on a server never started, as `run_python` needs no server.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import threading
import urllib.request
from collections.abc import Iterator

import pytest

from loadgen.daphne_process import DaphneProcess
from tests.service.test_faults import session_cookie

PID = "import os; print(os.getpid())"


@pytest.fixture(scope="module")
def server() -> Iterator[DaphneProcess]:
    with DaphneProcess(grpc=False, extra_env={"LOG_LEVEL": "WARNING"}) as process:
        yield process


@pytest.fixture
def idle() -> Iterator[DaphneProcess]:
    """A server's helpers without the server (nor a database with tables)."""
    process = DaphneProcess(grpc=False)
    try:
        yield process
    finally:
        process.cleanup()


def pid_of(process: DaphneProcess) -> int:
    return int(process.run_python(PID))


def kill_and_wait(pid: int) -> None:
    """SIGKILL, then wait until it has died, leaving it for its Popen to reap."""
    os.kill(pid, signal.SIGKILL)
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_tenant_written_through_run_python_is_served_by_the_running_server(
    server: DaphneProcess,
) -> None:
    server.run_python(
        "from api.store.services import tenant_put\n"
        "tenant_put(tenant_id='written-aside', config={'max_queriers_per_tenant': 3},\n"
        "           expected_version=None, author=None, source='cli')\n"
    )
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/tenants/written-aside/",
        headers={"Authorization": f"Bearer {server.issue_token('viewer', 'aside-viewer')}"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.loads(response.read())["max_queriers_per_tenant"] == 3


def test_a_user_created_through_run_python_can_sign_in_to_the_running_server(
    server: DaphneProcess,
) -> None:
    server.create_user("aside-user", "pw-aside-123", group="viewer")
    assert "sessionid=" in session_cookie(server, "aside-user", "pw-aside-123")


def test_tokens_issued_by_name_and_by_role_each_work_on_the_server(
    server: DaphneProcess,
) -> None:
    tokens = [server.issue_token("viewer", "named-viewer"), *server.issue_tokens("viewer")]
    names = server.run_python(
        "from api.store.models import ApiToken\n"
        "print(*ApiToken.objects.order_by('pk').values_list('name', flat=True))"
    ).split()
    assert names[-2:] == ["named-viewer", "test-viewer"]
    for token in tokens:
        request = urllib.request.Request(
            f"{server.base_url}/api/v1/tenants/", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200


def test_what_the_code_prints_comes_back_exactly(idle: DaphneProcess) -> None:
    # Longer than a pipe's buffer, with what a line- or NUL-framed protocol would split on.
    text = "zero\x00 line\nbreak \u00e9\u2603 " * 10_000
    assert idle.run_python(f"print({text!r}, end='')") == text


def test_each_call_runs_in_a_fresh_namespace(idle: DaphneProcess) -> None:
    idle.run_python("left_behind = 1")
    assert idle.run_python("print('left_behind' in dir())") == "False\n"


def test_an_error_in_the_code_raises_with_its_traceback_and_stderr(idle: DaphneProcess) -> None:
    with pytest.raises(RuntimeError, match=r"(?s)said before.*ZeroDivisionError"):
        idle.run_python("import sys\nprint('said before', file=sys.stderr)\n1 / 0")


def test_sys_exit_zero_is_success_and_other_codes_are_errors(idle: DaphneProcess) -> None:
    assert idle.run_python("import sys\nprint('bye')\nsys.exit(0)") == "bye\n"
    with pytest.raises(RuntimeError, match="SystemExit: 3"):
        idle.run_python("import sys\nsys.exit(3)")


def test_a_second_call_and_a_call_after_an_error_reuse_the_process(idle: DaphneProcess) -> None:
    first = pid_of(idle)
    with pytest.raises(RuntimeError):
        idle.run_python("raise ValueError('no')")
    assert pid_of(idle) == first
    assert first != os.getpid()


def test_the_database_is_let_go_after_each_call(server: DaphneProcess) -> None:
    # The code leaves a write transaction open: only closing its connection ends it.
    server.run_python(
        "from django.db import connection\nconnection.cursor().execute('BEGIN IMMEDIATE')"
    )
    other = sqlite3.connect(server.tmp / "db.sqlite3", timeout=0, isolation_level=None)
    with contextlib.closing(other):
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")


def test_the_process_is_gone_after_cleanup() -> None:
    process = DaphneProcess(grpc=False)
    pid = pid_of(process)
    process.cleanup()
    assert not is_running(pid)


def test_the_process_is_gone_after_stop_and_a_later_call_starts_another(
    idle: DaphneProcess,
) -> None:
    pid = pid_of(idle)
    idle.stop()
    assert not is_running(pid)
    assert pid_of(idle) != pid


def test_a_process_killed_between_calls_is_replaced(idle: DaphneProcess) -> None:
    pid = pid_of(idle)
    kill_and_wait(pid)
    assert idle.run_python("print('again')") == "again\n"
    assert pid_of(idle) != pid


def test_a_process_dying_during_a_call_fails_that_call_and_the_next_starts_another(
    idle: DaphneProcess,
) -> None:
    pid = pid_of(idle)
    with pytest.raises(RuntimeError, match="exit code -9"):
        idle.run_python("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert not is_running(pid)
    assert pid_of(idle) != pid


def test_a_changed_env_restarts_the_process_with_it(idle: DaphneProcess) -> None:
    probe = "import os; print(os.environ.get('QI_PROBE'))"
    assert idle.run_python(probe) == "None\n"
    pid = pid_of(idle)
    idle.env["QI_PROBE"] = "set later"
    assert idle.run_python(probe) == "set later\n"
    assert not is_running(pid)


def test_calls_from_several_threads_each_get_their_own_answer(idle: DaphneProcess) -> None:
    answers: dict[int, list[str]] = {n: [] for n in range(4)}

    def ask(n: int) -> None:
        for _ in range(25):
            answers[n].append(idle.run_python(f"print({n})"))

    threads = [threading.Thread(target=ask, args=(n,)) for n in answers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == {n: [f"{n}\n"] * 25 for n in answers}
