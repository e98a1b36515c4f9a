"""Record the demo before and after a config change, for the what-if prediction test.

`python -m tests.load.record_change_windows [--before 400] [--after 440] [--window 300]
[--port N --grpc-port N]`

One real Daphne (loadgen.daphne_process) with the demo config runs the
seeded demo load (`tests.load.record_demo_window.start_demo`) for
`--before` seconds; the last `--window` seconds are downloaded from
`GET /api/v1/recording/` (config A, the demo's). Then config B (`CHANGE`,
below) is saved as an operator would (`PUT /api/v1/tenants/<id>/` with an
editor token) while the same load keeps flowing, and `--after` seconds
later the last `--window` seconds are downloaded again (config B). The
default `--after` leaves the window and its warm-up minute after the
change, plus some 20 s for the backlog A left to drain: a window spans
`--window` to a minute more (it starts at a whole minute) and the warm-up
is the minute before it. Writes tests/scheduler_core/fixtures/
change_before.json and change_after.json; stops everything it started.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
import urllib.request
from typing import Any

from loadgen.daphne_process import BASE_DIR, DaphneProcess
from tests.load.record_demo_window import (
    fetch_recording,
    start_demo,
    stop_demo,
    write_recording,
)

__all__ = ["AFTER", "BEFORE", "CHANGE", "changed_blocks", "main", "pin_ports"]

FIXTURES = BASE_DIR / "tests" / "scheduler_core" / "fixtures"
BEFORE = FIXTURES / "change_before.json"
AFTER = FIXTURES / "change_after.json"

# Config B, as changes to the demo's tenant blocks (dotted paths inside a
# block). team-b: the README's fix, one querier of its three-querier shard
# reserved for its instant queries instead of two, so its range queries
# drain. team-c: shuffle-sharded onto one querier and limited to 20
# outstanding requests, about all that querier's 4 workers can serve, so
# team-c queues and is refused some requests (429).
CHANGE: dict[str, dict[str, Any]] = {
    "team-b": {"query_priority.priorities.0.reserved_queriers": 1},
    "team-c": {"max_queriers_per_tenant": 1, "max_outstanding_requests_per_tenant": 20},
}


def pin_ports(server: DaphneProcess, http_port: int, grpc_port: int) -> None:
    """`server` (not started yet) on these ports: a machine where each user keeps to a range."""
    server.port, server.grpc_port = http_port, grpc_port
    server.base_url = f"http://127.0.0.1:{http_port}"
    server.ws_url = f"ws://127.0.0.1:{http_port}"
    server.env["GRPC_PORT"] = str(grpc_port)


def changed_blocks(
    tenants: dict[str, Any], change: dict[str, dict[str, Any]] | None = None
) -> dict[str, dict[str, Any]]:
    """The blocks of the tenants `change` names (config B's: `CHANGE`), from the live
    blocks `tenants`, each dotted path set to its value."""
    out = {}
    for tenant, changes in (CHANGE if change is None else change).items():
        block = copy.deepcopy(tenants[tenant])
        for path, value in changes.items():
            *parents, leaf = path.split(".")
            node = block
            for part in parents:
                node = node[int(part)] if isinstance(node, list) else node[part]
            node[leaf] = value
        out[tenant] = block
    return out


def _put_tenant(server: DaphneProcess, token: str, tenant: str, block: dict[str, Any]) -> None:
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/tenants/{tenant}/",
        data=json.dumps(block).encode(),
        method="PUT",
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "If-Match": "*",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


def record(
    before: float, after: float, window: int, ports: tuple[int, int] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(recording under A, recording under B) of one run; see the module doc."""
    server = DaphneProcess(grpc=True)
    if ports is not None:
        pin_ports(server, *ports)
    loadgen = None
    try:
        server.start()
        viewer = server.issue_token("viewer", "recorder")
        editor = server.issue_token("editor", "changer")
        loadgen = start_demo(server)
        time.sleep(before)
        live = dict(fetch_recording(server, viewer, window, loadgen))
        for tenant, block in changed_blocks(live["config"]["tenants"]).items():
            _put_tenant(server, editor, tenant, block)
        time.sleep(after)
        return live, dict(fetch_recording(server, viewer, window, loadgen))
    finally:
        stop_demo(server, loadgen)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.load.record_change_windows")
    parser.add_argument("--before", type=float, default=400.0, help="seconds under config A")
    parser.add_argument("--after", type=float, default=440.0, help="seconds under config B")
    parser.add_argument("--window", type=int, default=300, help="seconds of each to keep")
    parser.add_argument("--port", type=int, help="Daphne's HTTP port (default: a free one)")
    parser.add_argument("--grpc-port", type=int, help="its gRPC port (with --port)")
    args = parser.parse_args(argv)
    if (args.port is None) != (args.grpc_port is None):
        parser.error("--port and --grpc-port go together")
    ports = None if args.port is None else (args.port, args.grpc_port)
    live, changed = record(args.before, args.after, args.window, ports)
    write_recording(live, BEFORE)
    write_recording(changed, AFTER)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
