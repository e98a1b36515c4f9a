"""Fixtures the load generator's tests share."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest


@pytest.fixture
def refusing_url() -> Iterator[str]:
    """A loopback port bound but not listening: every connection to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
