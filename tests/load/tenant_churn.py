"""Tenant churn soak: does a real scheduler forget tenants that came and went?

Starts one Daphne with the per-tenant idle delay cut to seconds
(`METRICS_TENANT_IDLE_SECONDS`), then runs identical rounds: each sends a
few requests for each of `--tenants` tenant IDs never seen before (every
fifth a made-up federated `a|b`) through a websocket frontend, served by a
websocket querier, waits past the idle delay and the querier-time window,
and reads what the process still holds: RSS (VmRSS from /proc), the
per-tenant `/metrics` series and `queue/usage/`'s tenant count. Bounded
memory means the series and tenant counts fall back to zero after each
round and RSS stops growing after the first (the allocator keeps what the
first round's peak took, so round 1 costs more than those after it).

A benchmark, not a test: a few minutes at the defaults.

    .venv/bin/python -m tests.load.tenant_churn --tenants 20000 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import urllib.request
from typing import Any

from loadgen.daphne_process import DaphneProcess
from loadgen.wsclients import FrontendClient, QuerierClient

IDLE_SECONDS = 2
# The querier-time panel keeps a minute of buckets; tenants leave it after.
USAGE_WINDOW_SECONDS = 60
IN_FLIGHT = 400  # requests outstanding at once, so the round is paced by replies


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def get(server: DaphneProcess, path: str, token: str | None = None) -> str:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(server.base_url + path, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return str(response.read().decode())


def tenant_series(metrics_text: str) -> int:
    return sum(1 for line in metrics_text.splitlines() if 'user="' in line)


async def churn_round(server: DaphneProcess, tokens: dict[str, str], round_no: int, n: int) -> int:
    """Send two requests per new tenant; the number answered (result or rejected)."""
    answered = 0
    free = asyncio.Semaphore(IN_FLIGHT)

    def on_reply(msg: dict[str, Any]) -> None:
        nonlocal answered
        if msg.get("type") in ("result", "rejected", "failed"):
            answered += 1
            free.release()

    frontend = FrontendClient(f"{server.ws_url}/ws/frontend/", tokens["frontend"], on_reply)
    await frontend.start()
    now = time.time()
    try:
        for index in range(n):
            tenant = f"churn{round_no}-{index}"
            if index % 5 == 0:
                tenant += f"|churn{round_no}-fed{index}"
            for attempt in range(2):
                await free.acquire()
                msg = {"type": "enqueue", "id": f"{index}.{attempt}", "tenant": tenant}
                msg.update(query="up", start=now - 600, end=now, step=15)
                await frontend.send(msg)
        while answered < 2 * n:
            await asyncio.sleep(0.1)
    finally:
        await frontend.close()
    return answered


async def main(tenants: int, rounds: int, port: int, grpc_port: int) -> None:
    env = {"METRICS_TENANT_IDLE_SECONDS": str(IDLE_SECONDS)}
    server = DaphneProcess(extra_env=env)
    # Fixed ports: the machine's helpers each keep to their own range.
    server.port, server.grpc_port = port, grpc_port
    server.base_url, server.ws_url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}"
    server.env["GRPC_PORT"] = str(grpc_port)
    with server:
        assert server.proc is not None
        roles = ("frontend", "querier", "viewer")
        tokens = dict(zip(roles, server.issue_tokens(*roles), strict=True))
        querier = QuerierClient(
            f"{server.ws_url}/ws/querier/", tokens["querier"], "churn-querier", workers=16
        )
        await querier.start()
        print("round  tenants  answered  rss_mib  user_series  usage_tenants  seconds")
        print(f"{0:5}  {0:7}  {0:8}  {rss_mib(server.proc.pid):7.1f}")
        try:
            for round_no in range(1, rounds + 1):
                began = time.monotonic()
                answered = await churn_round(server, tokens, round_no, tenants)
                await asyncio.sleep(max(IDLE_SECONDS, USAGE_WINDOW_SECONDS) + 6)
                series = tenant_series(get(server, "/metrics"))  # the scrape sweeps first
                series = tenant_series(get(server, "/metrics"))  # peaks report a 0 once
                usage = json.loads(get(server, "/api/v1/queue/usage/", tokens["viewer"]))
                print(
                    f"{round_no:5}  {tenants:7}  {answered:8}  {rss_mib(server.proc.pid):7.1f}"
                    f"  {series:11}  {usage['tenant_count']:13}"
                    f"  {time.monotonic() - began:7.1f}"
                )
        finally:
            await querier.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=18600)
    parser.add_argument("--grpc-port", type=int, default=18601)
    args = parser.parse_args()
    asyncio.run(main(args.tenants, args.rounds, args.port, args.grpc_port))
