"""REST bodies sent chunked (no Content-Length) are read, on a real Daphne.

`curl -T -` and Go's HTTP client with a reader of unknown length stream a
body with `Transfer-Encoding: chunked`. DRF took such a request for one
without a body: a rollback whose body would be refused rolled back anyway.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from loadgen.daphne_process import DaphneProcess

TENANT = "chunked-t"


@pytest.fixture(scope="module")
def editor(daphne_server: DaphneProcess) -> str:
    return daphne_server.issue_token("editor", name="chunked-editor")


def chunked(
    server: DaphneProcess,
    token: str,
    method: str,
    path: str,
    chunks: list[bytes],
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """`method` on /api/v1/`path` with the body sent as `chunks`, chunked; status and JSON."""
    address = urlsplit(server.base_url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    try:
        connection.request(
            method,
            f"/api/v1/{path}",
            body=iter(chunks),
            headers={
                "Authorization": f"Bearer {token}",
                "Content-Type": "application/json",
                **(headers or {}),
            },
            encode_chunked=True,
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


def history(server: DaphneProcess, token: str) -> list[int]:
    status, body = chunked(server, token, "GET", "revisions/?limit=500", [])
    assert status == 200, body
    return [revision["id"] for revision in body["results"]]


@pytest.fixture(scope="module")
def revision(daphne_server: DaphneProcess, editor: str) -> Iterator[int]:
    """A tenant written twice with chunked bodies; the second write's revision."""
    block = json.dumps({"max_outstanding_requests_per_tenant": 7}).encode()
    status, body = chunked(
        daphne_server, editor, "PUT", f"tenants/{TENANT}/", [block[:5], block[5:]]
    )
    assert status == 201, body
    changed = json.dumps({"max_outstanding_requests_per_tenant": 9}).encode()
    status, body = chunked(
        daphne_server, editor, "PUT", f"tenants/{TENANT}/", [changed], {"If-Match": "*"}
    )
    assert status == 200, body
    yield history(daphne_server, editor)[0]


def test_a_tenant_written_with_a_chunked_body_holds_what_was_sent(
    daphne_server: DaphneProcess, editor: str, revision: int
) -> None:
    status, body = chunked(daphne_server, editor, "GET", f"tenants/{TENANT}/", [])
    assert status == 200
    assert body["max_outstanding_requests_per_tenant"] == 9


def test_a_chunked_rollback_body_that_would_be_refused_is_refused_and_rolls_nothing_back(
    daphne_server: DaphneProcess, editor: str, revision: int
) -> None:
    before = history(daphne_server, editor)
    status, body = chunked(
        daphne_server, editor, "POST", f"revisions/{revision}/rollback/", [b'{"dry_run": true}']
    )
    assert status == 400, body
    assert "?dry_run=1" in body["dry_run"][0]
    assert history(daphne_server, editor) == before


def test_a_chunked_rollback_note_is_recorded(
    daphne_server: DaphneProcess, editor: str, revision: int
) -> None:
    status, body = chunked(
        daphne_server,
        editor,
        "POST",
        f"revisions/{revision}/rollback/",
        [b'{"note": "sent ', b'in chunks"}'],
    )
    assert status == 201, body
    assert body["revision"]["message"] == f"rollback of revision #{revision}: sent in chunks"


def test_an_empty_chunked_body_is_no_body_and_one_past_the_limit_is_too_large(
    daphne_server: DaphneProcess, editor: str
) -> None:
    status, body = chunked(daphne_server, editor, "PUT", "tenants/chunked-empty/", [])
    assert status == 400 and "a body is required" in json.dumps(body), body
    huge = b'{"x": "' + b"a" * (1024 * 1024) + b'"}'
    status, body = chunked(daphne_server, editor, "PUT", "tenants/chunked-huge/", [huge])
    assert status == 413, body
    assert "1048576 bytes" in body["detail"]
