"""`manage.py loadgen`'s options and start-up, in-process, with no scheduler running.

An option out of range is refused before anything starts, naming the
option; the tokens the command issues for itself are revoked however it
stops, here when nothing answers at `--url`.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http import HTTPStatus
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from websockets.sync.server import serve

from api.store.models import ApiToken
from api.store.services import api_token_issue

pytestmark = pytest.mark.django_db


def loadgen(*args: str) -> None:
    call_command("loadgen", *args, stdout=StringIO(), stderr=StringIO())


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--rate", "0"], "--rate must be a number of requests per second above 0, not 0.0"),
        (["--rate", "-5"], "--rate must be a number of requests per second above 0"),
        (["--rate", "nan"], "--rate must be a number of requests per second above 0, not nan"),
        (["--rate", "inf"], "--rate must be a number of requests per second above 0, not inf"),
        (["--report-every", "0"], "--report-every must be a number of seconds above 0"),
        (["--report-every", "nan"], "--report-every must be a number of seconds above 0"),
        (["--grpc-share", "1.5"], "--grpc-share must be between 0 and 1"),
        (["--give-up-after", "-1"],
         "--give-up-after must be a number of seconds, 0 or more, not -1.0"),
        (["--give-up-after", "inf"], "--give-up-after must be a number of seconds, 0 or more"),
        (["--frontends", "0"], "--frontends must be at least 1, not 0"),
        (["--queriers", "-1"], "--queriers must be 0 or more, not -1"),
        (["--workers", "0"], "--workers must be between 1 and 256, not 0"),
        (["--workers", "257"], "--workers must be between 1 and 256, not 257"),
        (["--grpc", "localhost"], "--grpc must look like 127.0.0.1:9095 (host:port), not 'local"),
        (["--grpc", ":9095"], "--grpc must look like 127.0.0.1:9095"),
        (["--grpc", "h:99999"], "--grpc must look like 127.0.0.1:9095"),
        (["--url", "ftp://x"], "--url must look like http://127.0.0.1:8000"),
        (["--rate", "1e308"],
         "--rate must be at most 10000 requests per second (what one load generator can send), "
         "not 1e+308"),
        (["--rate", "10000.5"], "--rate must be at most 10000 requests per second"),
        (["--url", "http://127.0.0.1:8000/some/path"],
         "--url must be a scheduler's base URL with no path, like http://127.0.0.1:8000, "
         "not 'http://127.0.0.1:8000/some/path'"),
        (["--url", "http://127.0.0.1:8000/?x=1"], "--url must be a scheduler's base URL"),
        (["--url", "http://127.0.0.1:8000#top"], "--url must be a scheduler's base URL"),
    ],
)  # fmt: skip
def test_an_option_out_of_range_is_refused_by_name_before_anything_starts(
    args: list[str], error: str
) -> None:
    with pytest.raises(CommandError) as raised:
        loadgen(*args)
    assert str(raised.value).startswith(error)
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize(
    "url", ["http://loadgen:s3cret@127.0.0.1:8000", "http://s3cret@127.0.0.1:8000", "http://@h:1"]
)
def test_a_url_with_a_user_name_or_password_is_refused_without_repeating_them(url: str) -> None:
    # Every report line echoes the URLs: a password there would be printed, and logged.
    with pytest.raises(CommandError) as raised:
        loadgen("--url", url)
    assert str(raised.value) == (
        "--url must be a scheduler's base URL with no user name or password, "
        "like http://127.0.0.1:8000 (host:port only)"
    )
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000", "twice"),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000/", "as 'http://127.0.0.1:8000' does"),
        ("http://LocalHost", "http://localhost:80", "as 'http://LocalHost' does"),
        ("HTTPS://h:443", "https://h", "as 'HTTPS://h:443' does"),
        ("http://[::1]:8000", "http://[0:0::1]:8000", "as 'http://[::1]:8000' does"),
    ],
)
def test_one_server_given_twice_as_url_is_refused_not_counted_as_two_replicas(
    first: str, second: str, same: str
) -> None:
    with pytest.raises(CommandError) as raised:
        loadgen("--url", first, "--url", second)
    assert str(raised.value) == (
        f"--url {second!r} names the same server {same}: give each replica once"
    )
    assert not ApiToken.objects.exists()


def test_two_servers_on_one_host_are_two_replicas(refusing_url: str) -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        second = f"http://127.0.0.1:{other.getsockname()[1]}"
        # Past the checks, to the connections (refused here).
        with pytest.raises(CommandError) as raised:
            loadgen("--url", refusing_url, "--url", second, "--queriers", "1")
    assert str(raised.value).startswith(
        f"cannot connect to ws://{refusing_url[7:]}, ws://{second[7:]}: "
    )


def test_the_highest_rate_and_a_base_url_with_a_trailing_slash_are_taken(
    refusing_url: str,
) -> None:
    # Past the checks, to the connection (refused here), at the URL's root.
    with pytest.raises(CommandError) as raised:
        loadgen("--url", f"{refusing_url}/", "--rate", "10000", "--queriers", "1")
    assert str(raised.value).startswith(f"cannot connect to ws://{refusing_url[7:]}: ")


def test_no_scheduler_at_the_url_is_said_in_one_line_and_its_own_tokens_are_revoked(
    refusing_url: str,
) -> None:
    with pytest.raises(CommandError) as raised:
        loadgen("--url", refusing_url, "--queriers", "1")
    assert str(raised.value).startswith(f"cannot connect to ws://{refusing_url[7:]}: ")
    assert str(raised.value).endswith("(is the scheduler running?)")
    tokens = ApiToken.objects.order_by("name")
    assert [(t.name, t.revoked) for t in tokens] == [
        ("loadgen-frontend", True),
        ("loadgen-querier", True),
    ]


@pytest.fixture
def refusing_scheduler() -> Iterator[str]:
    """A websocket server that answers every handshake 403, as ours does a dead token."""
    with serve(
        lambda _: None,
        "127.0.0.1",
        0,
        process_request=lambda conn, _: conn.respond(HTTPStatus.FORBIDDEN, "no\n"),
    ) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.socket.getsockname()[1]}"
        server.shutdown()
        thread.join(5)


def test_a_refused_token_is_said_as_such_not_as_a_scheduler_that_is_down(
    refusing_scheduler: str,
) -> None:
    with pytest.raises(CommandError) as raised:
        loadgen("--url", refusing_scheduler, "--token", "qi_dead", "--queriers", "1")
    assert "HTTP 403 (the token was refused: " in str(raised.value)
    assert "is the scheduler running" not in str(raised.value)


def test_a_token_given_on_the_command_line_is_not_revoked(refusing_url: str) -> None:
    token, plaintext = api_token_issue(name="mine", role="editor")
    with pytest.raises(CommandError, match="cannot connect"):
        loadgen("--url", refusing_url, "--token", plaintext)
    token.refresh_from_db()
    assert not token.revoked
    assert ApiToken.objects.count() == 1
