"""`manage.py loadgen --url http://127.0.0.1:8000`: demo traffic until Ctrl-C.

`--url` may be repeated, one per scheduler replica: every querier then
connects to every replica, and frontends are spread over the replicas,
each retrying a 429 once on another (`api.wsclients.SpreadFrontend`).

Real protocol clients over loopback (docs/protocol.md): frontends send the
demo mix of api.loadgen at `--rate` requests per second (Poisson), queriers
answer after per-component latencies, store-gateway work slowed by the
factor `manage.py loadgen_slowdown N` sets. Without `--token` it issues its
own frontend and querier tokens through the services, so it must run
against the same database as the server (as `make demo` does).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

from django.core.management.base import BaseCommand, CommandError, CommandParser

from api.loadgen import latency_for, make_request, read_slowdown
from api.services import api_token_issue
from api.wsclients import SpreadFrontend, queriers_everywhere

__all__ = ["Command"]

# Stop sending while this many requests are unanswered: the demo should
# show queues, not grow them without bound.
MAX_OUTSTANDING = 2000


class Command(BaseCommand):
    help = "Run demo frontends and queriers against a running scheduler until Ctrl-C."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--url",
            action="append",
            help="a scheduler replica's base URL; repeat for each (default http://127.0.0.1:8000)",
        )
        parser.add_argument("--token", help="a token for both sides (editor role)")
        parser.add_argument("--frontend-token")
        parser.add_argument("--querier-token")
        parser.add_argument("--rate", type=float, default=65.0, help="requests per second")
        parser.add_argument("--frontends", type=int, default=2)
        parser.add_argument("--queriers", type=int, default=6)
        parser.add_argument("--workers", type=int, default=4)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--report-every", type=float, default=10.0)

    def handle(self, *args: Any, **options: Any) -> None:
        ws = [_ws_base(url) for url in options["url"] or ["http://127.0.0.1:8000"]]
        frontend_token = options["frontend_token"] or options["token"]
        querier_token = options["querier_token"] or options["token"]
        if frontend_token is None:
            frontend_token = api_token_issue(name="loadgen-frontend", role="frontend")[1]
        if querier_token is None:
            querier_token = api_token_issue(name="loadgen-querier", role="querier")[1]
        self.stdout.write(
            f"loadgen: {options['rate']:g} req/s to {', '.join(ws)}, "
            f"{options['queriers']} queriers x "
            f"{options['workers']} workers; `manage.py loadgen_slowdown 10` slows store-gateway"
        )
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(self._run(ws, frontend_token, querier_token, options))
        self.stdout.write("loadgen stopped")

    async def _run(self, ws: list[str], frontend_token: str, querier_token: str, opts: Any) -> None:
        rng = random.Random(opts["seed"])
        counts: Counter[str] = Counter()
        slowdown = [read_slowdown()]

        def on_reply(msg: dict[str, Any]) -> None:
            counts[msg.get("type", "?")] += 1

        def latency(msg: dict[str, Any]) -> float:
            return latency_for(msg.get("component", "unknown"), slowdown[0], rng)

        queriers = [
            client
            for i in range(opts["queriers"])
            for client in queriers_everywhere(
                [f"{base}/ws/querier/" for base in ws],
                querier_token,
                f"querier-{i + 1}",
                workers=opts["workers"],
                latency=latency,
            )
        ]
        frontends = [
            SpreadFrontend(
                [f"{base}/ws/frontend/" for base in ws], frontend_token, on_reply, home=i
            )
            for i in range(opts["frontends"])
        ]
        try:
            await asyncio.gather(*(q.start() for q in queriers), *(f.start() for f in frontends))
        except Exception as exc:
            raise CommandError(f"cannot connect to {ws}: {exc}") from exc
        tasks = [
            asyncio.create_task(self._send(frontends, counts, rng, opts["rate"])),
            asyncio.create_task(_poll_slowdown(slowdown)),
            asyncio.create_task(self._report(counts, slowdown, opts["report_every"])),
        ]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*(q.close() for q in queriers), return_exceptions=True)
            await asyncio.gather(*(f.close() for f in frontends), return_exceptions=True)

    async def _send(
        self, frontends: list[SpreadFrontend], counts: Counter[str], rng: random.Random, rate: float
    ) -> None:
        n = 0
        while True:
            await asyncio.sleep(rng.expovariate(rate))
            done = counts["result"] + counts["failed"] + counts["rejected"] + counts["error"]
            if counts["sent"] - done >= MAX_OUTSTANDING:
                continue
            n += 1
            counts["sent"] += 1
            await frontends[n % len(frontends)].send(make_request(rng, n))

    async def _report(self, counts: Counter[str], slowdown: list[float], every: float) -> None:
        while True:
            await asyncio.sleep(every)
            self.stdout.write(
                f"sent {counts['sent']} enqueued {counts['enqueued']} results {counts['result']} "
                f"rejected {counts['rejected']} failed {counts['failed']} errors {counts['error']} "
                f"(store-gateway slowdown x{slowdown[0]:g})"
            )


def _ws_base(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise CommandError("--url must look like http://127.0.0.1:8000")
    return f"{'wss' if parts.scheme == 'https' else 'ws'}://{parts.netloc}"


async def _poll_slowdown(slowdown: list[float]) -> None:
    while True:
        slowdown[0] = read_slowdown()
        await asyncio.sleep(1.0)
