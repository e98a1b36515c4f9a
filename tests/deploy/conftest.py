"""A server of the deploy tests' own: their stuck request must not disturb other queues."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import pytest

from loadgen.daphne_process import DaphneProcess


@pytest.fixture(scope="session")
def deploy_server() -> Iterator[DaphneProcess]:
    with DaphneProcess(grpc=False) as proc:
        yield proc


@pytest.fixture
def scrape(deploy_server: DaphneProcess) -> str:
    """The server's /metrics as Prometheus would read it now."""
    url = f"{deploy_server.base_url}/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())
