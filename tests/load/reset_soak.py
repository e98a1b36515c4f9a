"""Reset soak: does a Daphne keep connections after clients reset them?

Starts a real Daphne (`python -m config.serve`, on uvloop as deployed) from
each project given (this checkout by default; `--project DIR` adds another,
e.g. a `git archive` of an older commit with `.venv` linked in), then
`--resets` times sends an authenticated `GET /api/v1/tenants/` and resets
the connection at once (SO_LINGER 0: the request and the reset arrive
together), and then serves `--requests` plain `/healthz` requests, each on
a connection of its own. It prints the server's open descriptors and RSS
after each step, and how RSS grew per 1,000 requests after the resets:
about 0 when reset connections are ended and the reaper keeps running
(config/dead_connections.py), about 10 MB when every later connection is
kept.

A benchmark, not a test: about a minute a project.

    .venv/bin/python -m tests.load.reset_soak --project /tmp/old
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import struct
import tempfile
import time
from pathlib import Path

from tests.load.bench_processes import (
    Processes,
    free_port,
    http_ok,
    manage,
    project_python,
    wait_until,
)
from tests.load.editor_memory_bench import HERE, server_env
from tests.load.tenant_churn import rss_mib


def state(pid: int) -> str:
    """The server's open descriptors and RSS, as printed."""
    return f"{len(os.listdir(f'/proc/{pid}/fd'))} descriptors, RSS {rss_mib(pid):.0f} MiB"


def reset(port: int, token: str) -> None:
    client = socket.create_connection(("127.0.0.1", port))
    request = f"GET /api/v1/tenants/ HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}"
    client.sendall(f"{request}\r\n\r\n".encode())
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()


def healthz(port: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/healthz")
    connection.getresponse().read()
    connection.close()


def soak(project: Path, resets: int, requests: int) -> float:
    """RSS growth in MiB per 1,000 requests served after the resets."""
    folder = Path(tempfile.mkdtemp(prefix="qi-reset-soak-"))
    env = server_env(project, folder)
    python = project_python(project)
    manage(python, project, env, "migrate", "--noinput", "-v0")
    issued = manage(python, project, env, "issue_token", "reset-soak", "--role", "editor")
    token = issued.splitlines()[0]  # the token alone, then a line about it
    port = free_port()
    processes = Processes()
    argv = [python, "-m", "config.serve", "-b", "127.0.0.1", "-p", str(port)]
    server = processes.start(
        [*argv, "config.asgi:application"], folder / "daphne.log", cwd=project, env=env
    )
    try:
        url = f"http://127.0.0.1:{port}/healthz"
        wait_until("Daphne answering /healthz", lambda: http_ok(url), server, 60)
        print(f"  start: {state(server.pid)}")
        for _ in range(resets):
            reset(port, token)
        time.sleep(3)  # the reaper runs once a second
        before = rss_mib(server.pid)
        print(f"  after {resets} resets: {state(server.pid)}")
        for _ in range(requests):
            healthz(port)
        time.sleep(3)
        after = rss_mib(server.pid)
        print(f"  after {requests} requests: {state(server.pid)}")
        return (after - before) * 1000 / requests
    finally:
        processes.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resets", type=int, default=20)
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--project", type=Path, action="append", default=[])
    opts = parser.parse_args()
    for project in [HERE, *opts.project]:
        print(f"{project}:")
        growth = soak(project.resolve(), opts.resets, opts.requests)
        print(f"  RSS grew {growth:.2f} MiB per 1,000 requests after the resets")


if __name__ == "__main__":
    main()
