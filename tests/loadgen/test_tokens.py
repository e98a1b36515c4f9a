"""`manage.py loadgen`'s tokens from a file or the environment, kept out of `ps`.

The sources are read as the command reads them (`loadgen_tokens`); a bad one
stops the command before it issues a token; and against a real Daphne the
token from each source is the one the sockets use: the server marks it used,
the command issues none of its own, and revoking it stops the command.
"""

from __future__ import annotations

import contextlib
import sqlite3
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from api.store.models import ApiToken
from loadgen.daphne_process import DaphneProcess
from loadgen.tokens import loadgen_tokens
from tests.loadgen.test_loadgen_command import (
    DEADLINE,
    Output,
    killed_after,
    own_tokens_revoked,
    start_loadgen,
    until,
    ws_results,
)

TOKEN = "qi_from-a-file"
NO_OPTIONS = {
    name: None
    for side in ("token", "frontend_token", "querier_token")
    for name in (side, f"{side}_file")
}


def tokens(environ: dict[str, str] | None = None, **options: Any) -> tuple[Any, Any]:
    return loadgen_tokens({**NO_OPTIONS, **options}, environ or {})


def written(tmp_path: Path, content: bytes | str, name: str = "token") -> str:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return str(path)


@pytest.mark.parametrize("content", [TOKEN, f"{TOKEN}\n", f"{TOKEN}\r\n"])
def test_a_token_file_as_issue_token_printed_it_gives_both_sides_its_token(
    tmp_path: Path, content: str
) -> None:
    assert tokens(token_file=written(tmp_path, content)) == (TOKEN, TOKEN)


def test_each_side_s_file_gives_that_side_its_token(tmp_path: Path) -> None:
    frontend = written(tmp_path, "qi_frontend\n", "frontend")
    querier = written(tmp_path, "qi_querier\n", "querier")
    assert tokens(frontend_token_file=frontend, querier_token_file=querier) == (
        "qi_frontend",
        "qi_querier",
    )
    # As with --token: a side's own token before the shared one.
    assert tokens(token="qi_both", querier_token_file=querier) == ("qi_both", "qi_querier")


def test_the_environment_gives_the_tokens_when_no_token_option_is_given() -> None:
    environ = {"LOADGEN_TOKEN": "qi_both", "LOADGEN_QUERIER_TOKEN": "qi_querier"}
    assert tokens(environ) == ("qi_both", "qi_querier")
    assert tokens({"LOADGEN_FRONTEND_TOKEN": "qi_frontend"}) == ("qi_frontend", None)
    assert tokens({}) == (None, None)


def test_any_token_option_leaves_the_environment_unread(tmp_path: Path) -> None:
    environ = {"LOADGEN_TOKEN": "qi_env", "LOADGEN_QUERIER_TOKEN": "not a token"}
    assert tokens(environ, frontend_token="qi_cli") == ("qi_cli", None)
    assert tokens(environ, token_file=written(tmp_path, TOKEN)) == (TOKEN, TOKEN)


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"", "--token-file {path} is empty; it must hold a token as issue_token prints it"),
        (b" \n\n", "--token-file {path} is empty"),
        (b"qi_one\nqi_two\n",
         "--token-file {path} has 2 lines; it must hold one, a token as issue_token prints it "
         "(printable ASCII, no spaces)"),
        (b"qi_one\n\n", "--token-file {path} has 2 lines"),
        (b"qi_one two", "--token-file {path} must hold a token as issue_token prints it"),
        ("qi_caf\u00e9".encode(), "--token-file {path} must hold a token as issue_token"),
        (b"\xef\xbb\xbfqi_bom", "--token-file {path} must hold a token as issue_token"),
        (b"q" * 4097, "--token-file {path} is over 4096 bytes: not a token file"),
    ],
)  # fmt: skip
def test_a_token_file_holding_what_is_not_one_token_is_refused_naming_the_option(
    tmp_path: Path, content: bytes, error: str
) -> None:
    path = written(tmp_path, content)
    with pytest.raises(CommandError) as refused:
        tokens(token_file=path)
    assert str(refused.value).startswith(error.format(path=path))
    assert "qi_" not in str(refused.value).replace(path, "")  # never what the file holds


def test_a_token_file_that_cannot_be_read_is_refused_naming_the_option_and_why(
    tmp_path: Path,
) -> None:
    missing = str(tmp_path / "missing")
    with pytest.raises(CommandError, match=f"^--querier-token-file: cannot read {missing}: No "):
        tokens(querier_token_file=missing)
    with pytest.raises(CommandError, match=f"^--token-file: cannot read {tmp_path}: Is a direct"):
        tokens(token_file=str(tmp_path))


@pytest.mark.parametrize(
    ("environ", "error"),
    [
        ({"LOADGEN_TOKEN": ""}, "LOADGEN_TOKEN is set but empty: set it to a token or unset it"),
        ({"LOADGEN_FRONTEND_TOKEN": "qi_x\n"},
         "LOADGEN_FRONTEND_TOKEN (in the environment) must be a token as issue_token prints it"),
    ],
)  # fmt: skip
def test_a_variable_holding_what_is_not_a_token_is_refused_naming_it(
    environ: dict[str, str], error: str
) -> None:
    with pytest.raises(CommandError) as refused:
        tokens(environ)
    assert str(refused.value).startswith(error)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--token", "qi_a", "--token-file", "{file}"],
         "--token and --token-file: give one or the other, not both"),
        (["--frontend-token-file", "{missing}"], "--frontend-token-file: cannot read "),
        (["--querier-token-file", "{empty}"], "--querier-token-file {empty} is empty"),
        (["--token", ""], "--token must be a token as issue_token prints it"),
    ],
)  # fmt: skip
def test_a_bad_token_source_stops_the_command_before_it_issues_a_token(
    tmp_path: Path, args: list[str], error: str
) -> None:
    paths = {
        "file": written(tmp_path, TOKEN),
        "missing": str(tmp_path / "missing"),
        "empty": written(tmp_path, "", "empty"),
    }
    with pytest.raises(CommandError) as refused:
        call_command(
            "loadgen", *(arg.format(**paths) for arg in args), stdout=StringIO(), stderr=StringIO()
        )
    assert str(refused.value).startswith(error.format(**paths))
    assert not ApiToken.objects.exists()


def test_a_token_file_s_token_is_the_one_the_sockets_use_until_it_is_revoked(
    tmp_path: Path,
) -> None:
    with DaphneProcess(grpc=False) as server:
        path = written(tmp_path, server.issue_token("editor", "from-a-file") + "\n")
        loadgen = start_loadgen(server, "0.3", "--queriers", "1", "--token-file", path)
        out, err = Output(loadgen.stdout), Output(loadgen.stderr)
        with killed_after(loadgen):
            until(loadgen, err, lambda: out.reports() and ws_results(out.reports()[-1]), "results")
            server.manage("revoke_token", "--name", "from-a-file")
            assert loadgen.wait(DEADLINE) == 1
        issued = own_tokens_revoked(server)
        used = last_used(server)
    assert issued == []  # it issued none of its own: the file's carried the traffic
    assert used["from-a-file"] is not None
    [line] = [line for line in err.all() if line.startswith("CommandError")]
    assert line.endswith("(its token was revoked or has expired); stopping")


def test_tokens_from_the_environment_are_the_ones_the_sockets_use() -> None:
    with DaphneProcess(grpc=False) as server:
        frontend, querier = server.issue_tokens("frontend", "querier")
        server.env.update(LOADGEN_FRONTEND_TOKEN=frontend, LOADGEN_QUERIER_TOKEN=querier)
        loadgen = start_loadgen(server, "0.3", "--queriers", "1")
        out, err = Output(loadgen.stdout), Output(loadgen.stderr)
        with killed_after(loadgen):
            until(loadgen, err, lambda: out.reports() and ws_results(out.reports()[-1]), "results")
            loadgen.terminate()
            assert loadgen.wait(DEADLINE) == 0
        issued = own_tokens_revoked(server)
        used = last_used(server)
    assert issued == []
    assert used["test-frontend"] is not None and used["test-querier"] is not None
    assert not any("Traceback" in line for line in err.all())


def last_used(server: DaphneProcess) -> dict[str, str | None]:
    """Each token's name and when the server last took it, from its database."""
    with contextlib.closing(sqlite3.connect(server.tmp / "db.sqlite3")) as db:
        return dict(db.execute(f"SELECT name, last_used_at FROM {ApiToken._meta.db_table}"))
