"""Saving from the tenant editor or the settings page as a browser does: review, then confirm."""

from __future__ import annotations

import re
from typing import Any

from django.test import Client

__all__ = ["confirm", "review_token"]

_TOKEN = re.compile(r'name="reviewed" value="([0-9a-f]+)"')


def review_token(html: str) -> str | None:
    """The token of the review a first Save answered with, if it shows one."""
    found = _TOKEN.search(html)
    return found.group(1) if found else None


def confirm(client: Client, url: str, data: dict[str, Any], **extra: Any) -> Any:
    """The first Save (the review, which must save nothing), then the confirming second."""
    first = client.post(url, data)
    token = review_token(first.content.decode())
    if token is None:
        return first  # refused (errors, stale version): nothing to confirm
    assert first.status_code == 200
    return client.post(url, {**data, "reviewed": token}, **extra)
