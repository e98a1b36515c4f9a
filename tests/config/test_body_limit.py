"""The server-wide body limit sits above every endpoint's own (config/body_limit.py)."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

from api.rest.content import MAX_JSON_BODY_BYTES, MAX_YAML_BODY_BYTES
from config.body_limit import MAX_BODY_BYTES, refusal

NGINX_SITE = Path(__file__).resolve().parents[2] / "deploy" / "nginx" / "queue-inspector.conf"


def test_every_endpoint_answers_its_own_limit_below_the_servers() -> None:
    # Below it, an endpoint's own 413 names its own limit, in the API's JSON.
    own = (MAX_JSON_BODY_BYTES, MAX_YAML_BODY_BYTES, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    assert all(limit < MAX_BODY_BYTES for limit in own)


def test_the_shipped_nginx_site_takes_what_the_server_takes() -> None:
    found = re.search(r"client_max_body_size (\d+)m;", NGINX_SITE.read_text())
    assert found is not None and int(found[1]) * 1024 * 1024 == MAX_BODY_BYTES


def test_the_refusal_is_a_whole_http_response_that_closes_the_connection() -> None:
    head, _, body = refusal(12, 10).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 ")
    assert b"Connection: close" in head and f"Content-Length: {len(body)}".encode() in head
