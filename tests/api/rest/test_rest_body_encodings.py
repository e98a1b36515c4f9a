"""A body the API would misread is a 415 that says why, and changes nothing."""

from __future__ import annotations

import gzip
from typing import Any

import pytest

from api.store.models import ConfigRevision

URL = "/api/v1/tenants/t1/"
BODY = b'{"max_queriers_per_tenant": 2}'


@pytest.mark.parametrize(
    ("body", "headers", "named"),
    [
        (BODY, {"HTTP_CONTENT_ENCODING": "br"}, "Content-Encoding 'br'"),
        # mtime fixed: xdist's workers must name the same test the same way.
        (
            gzip.compress(BODY, mtime=0),
            {"HTTP_CONTENT_ENCODING": "gzip"},
            "Content-Encoding 'gzip'",
        ),
        (BODY, {}, "Content-Type '*/*'"),
    ],
    ids=["br", "gzip", "wildcard"],
)
def test_a_compressed_or_untyped_body_is_415_and_writes_nothing(
    editor_api: Any, body: bytes, headers: dict[str, str], named: str
) -> None:
    revisions = ConfigRevision.objects.count()
    content_type = "*/*" if not headers else "application/json"
    response = editor_api.generic("PUT", URL, body, content_type=content_type, **headers)
    assert response.status_code == 415, response.content
    assert named in response.json()["detail"]
    assert ConfigRevision.objects.count() == revisions


def test_an_identity_encoding_is_read_as_sent(editor_api: Any) -> None:
    response = editor_api.generic(
        "PUT", URL, BODY, content_type="application/json", HTTP_CONTENT_ENCODING="identity"
    )
    assert response.status_code == 201, response.content
