"""`manage.py loadgen --url http://127.0.0.1:8000`: demo traffic until Ctrl-C.

`--url` may be repeated, one per scheduler replica: every querier then
connects to every replica, and frontends are spread over the replicas,
each moving a request another replica may take (`loadgen.spread_frontend`).
A replica lost on the way is said on stderr and reconnected while the others
carry the traffic (`loadgen.replicas.Replicas`); the report line then ends
with the replicas up and the requests lost with a connection. A lone `--url`
lost (a restart) is reconnected the same way, sending again what a graceful
shutdown never accepted. It stops when no replica has been reachable for
`--give-up-after` seconds (GIVE_UP_SECONDS), or at once when a close says
its token is refused (reconnecting cannot help).

Real protocol clients over loopback (docs/protocol.md): frontends send the
demo mix of loadgen.demo_traffic at `--rate` requests per second (Poisson), queriers
answer after per-component latencies, store-gateway work slowed by the
factor `manage.py loadgen_slowdown N` sets. Without a token (`--token`, a
`--token-file` or the environment: loadgen.tokens) it issues its own
frontend and querier tokens through the services, so it must run against
the same database as the server (as `make demo` does), and revokes them
when it stops. Ctrl-C and SIGTERM stop it alike: its queriers say
`shutdown`, and it prints its totals and what was still unanswered.

`--grpc HOST:PORT` (repeatable, one per replica) adds Cortex's protocol: a
Cortex-style frontend sends `--grpc-share` of the same mix as forwarded HTTP
requests, and querier "cortex-querier-1" runs work from every address
(`loadgen.cortex_traffic.GrpcDemo`). If gRPC cannot connect, the websocket side sends
everything and each report line says why.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
from collections import Counter
from typing import Any

import grpc
import websockets
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from api.management.commands._database import database_command
from api.management.commands._interrupts import interrupts_deferred
from api.store.services import api_token_issue, api_token_revoke
from loadgen.cortex_traffic import GrpcDemo, GrpcUnavailable
from loadgen.demo_traffic import latency_for, make_request, read_slowdown
from loadgen.options import check_loadgen_options, ws_base
from loadgen.replicas import NoReplicaReachable, Replicas
from loadgen.spread_frontend import SpreadFrontend
from loadgen.tokens import add_token_arguments, loadgen_tokens
from loadgen.wsclients import queriers_everywhere

__all__ = ["Command"]

# Stop sending while this many requests are unanswered: the demo should
# show queues, not grow them without bound.
MAX_OUTSTANDING = 2000
# How long no replica may be reachable before the command stops (the
# default of --give-up-after): long enough for every replica to restart at once.
GIVE_UP_SECONDS = 30.0
# Close codes the scheduler gives a reason by (docs/protocol.md, "Close codes").
_CLOSE_HINTS = {
    4001: " (its token was revoked or has expired)",
    4003: " (its token's role may not use that endpoint)",
    4503: " (the scheduler's database did not answer)",
}


class Command(BaseCommand):
    help = (
        "Run demo frontends and queriers against a running scheduler until Ctrl-C. "
        "Tokens: --token-file PATH (and --frontend-token-file, --querier-token-file), or with "
        "no token option the environment variables LOADGEN_TOKEN, LOADGEN_FRONTEND_TOKEN and "
        "LOADGEN_QUERIER_TOKEN, keep them out of `ps`; a side given none gets a token issued "
        "for the run and revoked when it stops."
    )
    grpc_off = ""  # why the Cortex clients are not running, when they were asked for
    terminated = False  # SIGTERM asked it to stop

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--url",
            action="append",
            help="a scheduler replica's base URL; repeat for each (default http://127.0.0.1:8000)",
        )
        add_token_arguments(parser)
        parser.add_argument("--rate", type=float, default=65.0, help="requests per second")
        parser.add_argument("--frontends", type=int, default=2)
        parser.add_argument("--queriers", type=int, default=6)
        parser.add_argument("--workers", type=int, default=4)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--report-every", type=float, default=10.0)
        parser.add_argument(
            "--grpc",
            action="append",
            metavar="ADDRESS",
            help="a replica's Cortex gRPC address (host:port); repeat for each",
        )
        parser.add_argument(
            "--grpc-share",
            type=float,
            default=0.25,
            help="fraction of requests the Cortex frontend sends (default 0.25)",
        )
        parser.add_argument(
            "--give-up-after",
            type=float,
            default=GIVE_UP_SECONDS,
            metavar="SECONDS",
            help="stop when no replica has been reachable this long, reconnecting meanwhile "
            f"(default {GIVE_UP_SECONDS:g}; 0: at the first loss)",
        )

    @database_command
    def handle(self, *args: Any, **options: Any) -> None:
        ws = [ws_base(url) for url in options["url"] or ["http://127.0.0.1:8000"]]
        check_loadgen_options(options, replicas=len(ws))
        frontend_token, querier_token = loadgen_tokens(options, os.environ)
        # Tokens it issues itself are revoked when it stops, however it stops:
        # otherwise every demo run would leave two working tokens behind.
        issued: list[int] = []
        try:
            if frontend_token is None:
                frontend_token = _issue("loadgen-frontend", "frontend", issued)
            if querier_token is None:
                querier_token = _issue("loadgen-querier", "querier", issued)
            self._start_and_run(ws, frontend_token, querier_token, options)
        finally:
            # A Ctrl-C meanwhile (impatient, or the database is slow) would
            # leave the rest working: it is taken once all are revoked.
            with interrupts_deferred():
                self._revoke(issued)
        self.stdout.write("loadgen stopped")

    def _start_and_run(
        self, ws: list[str], frontend_token: str, querier_token: str, options: Any
    ) -> None:
        self.stdout.write(
            f"loadgen: {options['rate']:g} req/s to {', '.join(ws)}, "
            f"{options['queriers']} queriers x "
            f"{options['workers']} workers; `manage.py loadgen_slowdown 10` slows store-gateway"
        )
        if options["grpc"]:
            self.stdout.write(
                f"loadgen: Cortex gRPC clients at {', '.join(options['grpc'])} "
                f"send {options['grpc_share']:.0%} of requests"
            )
        try:
            asyncio.run(self._run(ws, frontend_token, querier_token, options))
        except KeyboardInterrupt:
            pass  # Ctrl-C: asyncio.run has cancelled _run, which closed everything
        except asyncio.CancelledError:
            if not self.terminated:
                raise  # cancelled by something other than SIGTERM: a bug, not a stop
        except (websockets.ConnectionClosed, NoReplicaReachable) as exc:
            # Every replica was gone for --give-up-after seconds, or a close
            # refused its token: say so in a line, not with a traceback.
            raise CommandError(
                f"the scheduler closed the connection ({exc}){_closed_hint(exc)}; stopping"
            ) from None

    def _revoke(self, token_ids: list[int]) -> None:
        for token_id in token_ids:
            try:
                api_token_revoke(token_id=token_id)
            except DatabaseError as exc:
                self.stderr.write(f"loadgen: could not revoke its token #{token_id}: {exc}")

    async def _run(self, ws: list[str], frontend_token: str, querier_token: str, opts: Any) -> None:
        # SIGTERM (what `make demo`'s Ctrl-C trap and process managers send)
        # stops it as Ctrl-C does: queriers say goodbye, tokens are revoked.
        main = asyncio.current_task()
        assert main is not None

        def stop() -> None:
            self.terminated = True
            main.cancel()

        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
        rng = random.Random(opts["seed"])
        counts: Counter[str] = Counter()
        slowdown = [read_slowdown()]

        def on_reply(msg: dict[str, Any]) -> None:
            counts[msg.get("type", "?")] += 1

        def latency(msg: dict[str, Any]) -> float:
            return latency_for(msg.get("component", "unknown"), slowdown[0], rng)

        queriers = [
            queriers_everywhere(
                [f"{base}/ws/querier/" for base in ws],
                querier_token,
                f"querier-{i + 1}",
                workers=opts["workers"],
                latency=latency,
            )
            for i in range(opts["queriers"])
        ]
        frontends = [
            SpreadFrontend(
                [f"{base}/ws/frontend/" for base in ws],
                frontend_token,
                on_reply,
                home=i,
                name=f"loadgen-{os.getpid()}-{i + 1}",
            )
            for i in range(opts["frontends"])
        ]
        replicas = Replicas(
            opts["url"] or ws,  # named as given on the command line
            [[everywhere[r] for everywhere in queriers] for r in range(len(ws))],  # per replica
            frontends,
            give_up=opts["give_up_after"],
            warn=self.stderr.write,
        )
        grpc_demo: GrpcDemo | None = None
        tasks: list[asyncio.Task[None]] = []
        connected = True  # false only when a replica refused the first connection
        # One stop path wherever the stop lands (Ctrl-C or SIGTERM cancel
        # this task): still connecting to the replicas or to gRPC, or running.
        try:
            try:
                await replicas.start()
            except Exception as exc:
                connected = False
                raise CommandError(
                    f"cannot connect to {', '.join(ws)}: {exc}{_hint(exc)}"
                ) from None
            grpc_demo = await self._start_grpc(
                opts, lambda component: latency_for(component, slowdown[0], rng)
            )
            tasks = [
                asyncio.create_task(replicas.watch()),
                asyncio.create_task(self._send(frontends, replicas, grpc_demo, counts, rng, opts)),
                asyncio.create_task(_poll_slowdown(slowdown)),
                asyncio.create_task(
                    self._report(counts, replicas, grpc_demo, slowdown, opts["report_every"])
                ),
            ]
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await replicas.close()
            if grpc_demo is not None:
                await grpc_demo.close()
            if connected:
                # The totals at the end, and what they do not count: requests
                # sent that had no answer when it stopped (neither lost nor
                # done). The report line first: it counts gRPC queries past
                # their deadline lost.
                self._report_line(counts, replicas, grpc_demo, slowdown)
                self.stdout.write(
                    "loadgen: unanswered at the stop: websocket "
                    f"{_ws_unanswered(counts, replicas)}"
                    + (f", grpc {grpc_demo.unanswered}" if grpc_demo is not None else "")
                )

    async def _start_grpc(self, opts: Any, latency: Any) -> GrpcDemo | None:
        """The Cortex clients, or None (said once, loudly) when they cannot connect."""
        self.grpc_off = ""
        if not opts["grpc"]:
            return None
        demo = GrpcDemo(opts["grpc"], latency, workers=max(opts["workers"], 4), seed=opts["seed"])
        try:
            return await demo.start()
        except (GrpcUnavailable, grpc.aio.AioRpcError, RuntimeError, OSError) as exc:
            self.grpc_off = f"grpc: off ({exc})"
            self.stderr.write(f"grpc: cannot start the Cortex clients: {exc}")
            self.stderr.write("grpc: off; the websocket clients send every request")
            return None

    async def _send(
        self,
        frontends: list[SpreadFrontend],
        replicas: Replicas,
        grpc_demo: GrpcDemo | None,
        counts: Counter[str],
        rng: random.Random,
        opts: Any,
    ) -> None:
        n = 0
        while True:
            await asyncio.sleep(rng.expovariate(opts["rate"]))
            grpc_outstanding = grpc_demo.outstanding if grpc_demo is not None else 0
            if _ws_unanswered(counts, replicas) + grpc_outstanding >= MAX_OUTSTANDING:
                continue
            n += 1
            msg = make_request(rng, n)
            to_grpc = grpc_demo is not None and rng.random() < opts["grpc_share"]
            if to_grpc and grpc_demo is not None and grpc_demo.submit(msg):
                continue
            counts["sent"] += 1  # before the send: its reply may be read while it waits
            if not await frontends[n % len(frontends)].send(msg):
                counts["sent"] -= 1  # every replica is lost: not sent after all

    async def _report(
        self,
        counts: Counter[str],
        replicas: Replicas,
        grpc_demo: GrpcDemo | None,
        slowdown: list[float],
        every: float,
    ) -> None:
        while True:
            await asyncio.sleep(every)
            self._report_line(counts, replicas, grpc_demo, slowdown)

    def _report_line(
        self,
        counts: Counter[str],
        replicas: Replicas,
        grpc_demo: GrpcDemo | None,
        slowdown: list[float],
    ) -> None:
        grpc_part = grpc_demo.status() if grpc_demo is not None else self.grpc_off
        self.stdout.write(
            f"websocket: sent {counts['sent']} enqueued {counts['enqueued']} "
            f"results {counts['result']} rejected {counts['rejected']} "
            f"failed {counts['failed']} errors {counts['error']} "
            + (f"| {grpc_part} " if grpc_part else "")
            + f"(store-gateway slowdown x{slowdown[0]:g})"
            # Added at the end, and only with several replicas or once the
            # lone one was lost, so the line reads as before wherever it was
            # read before.
            + (f" | {replicas.status()}" if len(replicas.names) > 1 or replicas.was_lost else "")
            + (f" | {retrying}" if (retrying := replicas.retrying()) else "")
        )


def _ws_unanswered(counts: Counter[str], replicas: Replicas) -> int:
    """Websocket requests sent with no final reply yet and not lost with a replica."""
    done = counts["result"] + counts["failed"] + counts["rejected"] + counts["error"]
    return counts["sent"] - done - replicas.lost


def _hint(exc: Exception) -> str:
    """What a failed first connection most likely means, for the one line it stops with."""
    if isinstance(exc, OSError):
        return " (is the scheduler running?)"
    if isinstance(exc, websockets.InvalidStatus) and exc.response.status_code in (401, 403):
        return " (the token was refused: give a live editor token, or frontend and querier ones)"
    return ""


def _closed_hint(exc: Exception) -> str:
    """Why the scheduler closed, when its close code says (a revoked token, not a restart)."""
    received = getattr(exc, "rcvd", None)
    return _CLOSE_HINTS.get(received.code, "") if received is not None else ""


def _issue(name: str, role: str, issued: list[int]) -> str:
    # Ctrl-C or SIGTERM while the INSERT waits (a locked database) would
    # stop it after the token was stored but before it was noted for
    # revoking: taken once it is noted, so the stop revokes it.
    with interrupts_deferred():
        token, plaintext = api_token_issue(name=name, role=role)
        issued.append(token.pk)
    return plaintext


async def _poll_slowdown(slowdown: list[float]) -> None:
    while True:
        slowdown[0] = read_slowdown()
        await asyncio.sleep(1.0)
