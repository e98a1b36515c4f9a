"""`loadgen` and `loadtest` refuse a bad option by name before anything starts.

Nothing starts: no token is issued, no Daphne (loadtest's is replaced by one
that fails the test if made), no socket opened.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from api.store.models import ApiToken
from loadgen.options import SPARE_FILES

pytestmark = pytest.mark.django_db

FILES = 200  # the open-file limit these tests run under (`files_limit`)


@pytest.fixture(autouse=True)
def files_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ulimit -n 200`, as the options' check reads it, whatever the machine's is."""
    monkeypatch.setattr("loadgen.options.resource.getrlimit", lambda _: (FILES, FILES))


def command(*args: str) -> None:
    call_command(*args, stdout=StringIO(), stderr=StringIO())


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--url", "http://[::1"], "--url must look like http://127.0.0.1:8000, not 'http://[::1'"),
        (["--url", "http://127.0.0.1:abc"], "--url must look like http://127.0.0.1:8000, not "),
        (["--url", "http://127.0.0.1:99999"], "--url must look like http://127.0.0.1:8000, not "),
        (["--url", "http://127.0.0.1:0"], "--url must look like http://127.0.0.1:8000, not "),
        (["--url", "http://:8000"], "--url must look like http://127.0.0.1:8000, not "),
        (["--grpc", "127.0.0.1:0"], "--grpc must look like 127.0.0.1:9095 (host:port)"),
        (["--grpc", "127.0.0.1:\u0661"], "--grpc must look like 127.0.0.1:9095 (host:port)"),
        (["--token", ""], "--token must be a token as issue_token prints it"),
        (["--token", "qi_a\nb"], "--token must be a token as issue_token prints it"),
        (["--frontend-token", "qi_\u00e9"], "--frontend-token must be a token as issue_token"),
        (["--querier-token", "qi_a b"], "--querier-token must be a token as issue_token"),
        (["--queriers", "135"], "--queriers and --frontends: 137 sockets, more than this proc"),
        (["--queriers", "67", "--url", "http://a:1", "--url", "http://b:1"],
         "--queriers and --frontends: 138 sockets"),
    ],
)  # fmt: skip
def test_loadgen_refuses_a_garbled_url_address_token_or_too_many_sockets_by_name(
    args: list[str], error: str
) -> None:
    with pytest.raises(CommandError) as raised:
        command("loadgen", *args)
    assert str(raised.value).startswith(error)
    assert "\n" not in str(raised.value)
    assert not ApiToken.objects.exists()


def test_loadgen_takes_as_many_sockets_as_the_open_file_limit_leaves(refusing_url: str) -> None:
    # Exactly at the limit it goes on, to the connection (refused here).
    queriers = FILES - SPARE_FILES - 2
    with pytest.raises(CommandError, match="^cannot connect to ws://127.0.0.1:"):
        command("loadgen", "--url", refusing_url, "--queriers", str(queriers))


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    def started(**_: object) -> None:
        raise AssertionError("a bad option started Daphne")

    monkeypatch.setattr("loadgen.management.commands.loadtest.DaphneProcess", started)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--queriers", "0"], "--queriers must be at least 1, not 0"),
        (["--workers", "0"], "--workers must be between 1 and 256, not 0"),
        (["--workers", "257"], "--workers must be between 1 and 256, not 257"),
        (["--frontends", "-1"], "--frontends must be at least 1, not -1"),
        (["--window", "0"], "--window must be at least 1, not 0"),
        (["--seconds", "nan"], "--seconds must be a number of seconds above 0, not nan"),
        (["--seconds", "inf"], "--seconds must be a number of seconds above 0, not inf"),
        (["--seconds", "-1"], "--seconds must be a number of seconds above 0, not -1.0"),
        (["--latency-rate", "-1"], "--latency-rate must be a number of requests per second, or 0"),
        (["--latency-rate", "nan"], "--latency-rate must be a number of requests per second, or 0"),
        (["--latency-rate", "1e308"], "--latency-rate must be at most 10000 requests per second"),
        (["--frontends", "87"], "--queriers and --frontends: 137 sockets"),
    ],
)  # fmt: skip
def test_loadtest_refuses_an_option_out_of_range_by_name_before_starting_a_server(
    no_server: None, args: list[str], error: str
) -> None:
    with pytest.raises(CommandError) as raised:
        command("loadtest", *args)
    assert str(raised.value).startswith(error)
