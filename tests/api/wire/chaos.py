"""Seeded chaos runs over the real websocket frontend consumer, for any kind of querier.

`ChaosRun` opens frontends through the real ASGI application (routing,
token auth, `FrontendConsumer`, the process's runtime) with Channels'
communicators and takes random steps: enqueue (some queries rejected or
prioritized by the tenant's limits of the moment), cancel, an id enqueued
again while pending, a frontend that goes away with requests out, a
tenant's limits changing (shard, outstanding limit, reserved priority,
rejection), a frontend's token revoked, an operator's cancel of one queued or
running request or of a tenant's queued ones (`api.wire.queue_requests`, as
the drill-down and the REST API cancel), the running layout switched or the
actor sub-queues' depth changed (some requests carry actor paths; these
operator's steps live in `tests.api.wire.chaos_operator`), and the
querier side's steps, which subclasses provide (`open_querier`,
`read_queriers`, `running_of`, `answer`, `close`, `announce_shutdown`,
`hostile_querier`, `finish_by_answering`),
with a random number of loop turns between steps so events meet in every
order. What it checks:

- on every frame: an end (`result`, `failed`, `cancelled`) only for an
  acknowledged request not ended yet, `cancelled` only when asked, and an
  id accepted again only after its end (docs/protocol.md);
- after every step: the runtime holds (queued or running) no websocket
  request its frontend no longer waits for, unless its result already
  reached the frontend another way (through a gRPC querier, before its
  "done"); and, where the two move in one step (websocket queriers), every
  request a frontend waits for is held;
- at the end (`verify`): the runtime holds exactly what frontends wait
  for, nothing is queued or running, every frontend still
  open has an end for each acceptance, and no request whose result a querier
  sent was handed out again (subclasses report hand-outs by the
  `X-Chaos-Send` header each enqueue carries).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from channels.testing import WebsocketCommunicator

from api.wire import runtime_host
from api.wire.consumers.frontend import FrontendConsumer, WebsocketReplyHandle
from config.asgi import application
from scheduler_core.model import Request
from tests.api.wire.chaos_operator import TENANTS, OperatorSteps

__all__ = ["SEND_HEADER", "ChaosRun", "Frontend"]

QUERIES = ("up", "sum(rate(requests_total[5m]))", "count(reject_me)")
# Who inside a tenant sent a request (Loki's actor path; "" for none): the
# deepest is cut by the queue to `max_queue_hierarchy_levels`, which
# `reconfigure` changes mid-run.
ACTOR_HEADER = "X-Loki-Actor-Path"
ACTORS = ("", "", "alice", "bob|web", "bob|cli|x|y")
ENDS = frozenset({"result", "failed", "cancelled"})
# Each enqueue's serial, so a querier side can tell one acceptance from another.
SEND_HEADER = "X-Chaos-Send"


@dataclass
class Frontend:
    comm: WebsocketCommunicator
    open: bool = True
    # A client may enqueue an id again once it ended: each acceptance counts.
    acks: Counter[int] = field(default_factory=Counter)
    ends: Counter[int] = field(default_factory=Counter)
    cancels: set[int] = field(default_factory=set)
    duplicates: set[int] = field(default_factory=set)  # ids enqueued again while pending

    def unfinished(self) -> list[int]:
        return sorted(i for i, n in self.acks.items() if self.ends[i] < n)


class ChaosRun(OperatorSteps):
    """One seeded run; `log` says what happened, for the failure message."""

    def __init__(self, seed: int, tokens: dict[str, str], host: Any) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.tokens = tokens
        self.runtime = host.runtime
        self.frontends: list[Frontend] = []
        self.queriers: list[Any] = []  # the querier side's, see below
        self.sends = 0  # enqueues sent, for SEND_HEADER
        self.rid = 0  # the last new client id
        self.answered: set[str] = set()  # X-Chaos-Send of requests a querier answered
        self.handed_after_answer: list[str] = []
        self.log: list[str] = []
        self.leaving: set[str] = set()  # queriers that said they are shutting down
        # Every frontend consumer that opened, to compare with the runtime.
        self.consumers: list[FrontendConsumer] = []
        registry = host.websocket_frontends
        opened = registry.opened

        def record(consumer: FrontendConsumer) -> None:
            self.consumers.append(consumer)
            opened(consumer)

        registry.opened = record

    # -- what a querier side provides -------------------------------------------
    # Its queriers (in `self.queriers`) have a `name` and an `open` flag.

    async def open_querier(self) -> None:
        raise NotImplementedError

    def read_queriers(self) -> None:
        raise NotImplementedError

    def running_of(self, querier: Any) -> list[str]:
        """What the querier runs now, as the log names it."""
        raise NotImplementedError

    async def answer(self, *, then_close: bool = False) -> None:
        raise NotImplementedError

    async def close(self, querier: Any) -> None:
        """The querier goes away: its socket or streams end."""
        raise NotImplementedError

    async def announce_shutdown(self, querier: Any) -> None:
        """The querier says it is leaving (no new work for it; it may still answer)."""
        raise NotImplementedError

    async def hostile_querier(self) -> None:
        raise NotImplementedError

    async def revoke_querier(self) -> None:
        """A querier's token is revoked (nothing to do where queriers have none)."""

    async def finish_by_answering(self) -> None:
        raise NotImplementedError

    # -- queriers ----------------------------------------------------------------

    def live_queriers(self) -> list[Any]:
        return [q for q in self.queriers if q.open]

    async def close_querier(self) -> None:
        if self.live_queriers():
            q = self.rng.choice(self.live_queriers())
            self.log.append(f"{q.name} goes away with {self.running_of(q)} running")
            await self.close(q)

    async def shutdown_querier(self) -> None:
        if self.live_queriers():
            q = self.rng.choice(self.live_queriers())
            await self.announce_shutdown(q)
            self.leaving.add(q.name)
            self.log.append(f"{q.name} says it is shutting down")

    async def leave(self) -> None:
        """Queriers that said they are shutting down close once they run nothing, as Cortex's do."""
        for q in self.live_queriers():
            if q.name in self.leaving and not self.running_of(q):
                self.log.append(f"{q.name} has shut down")
                await self.close(q)

    def handed(self, send: str | None) -> None:
        """A querier got the request of enqueue `send` (None: not a websocket frontend's)."""
        if send is not None and send in self.answered:
            self.handed_after_answer.append(send)

    # -- frontends ----------------------------------------------------------------

    async def connect(self, path: str, role: str) -> WebsocketCommunicator:
        headers = [(b"authorization", f"Bearer {self.tokens[role]}".encode())]
        comm = WebsocketCommunicator(application, path, headers=headers)
        connected, _ = await comm.connect(timeout=5)
        assert connected
        return comm

    async def open_frontend(self) -> None:
        self.frontends.append(Frontend(await self.connect("/ws/frontend/", "frontend")))
        self.log.append(f"frontend {len(self.frontends) - 1} opens")

    def live_frontends(self) -> list[Frontend]:
        return [f for f in self.frontends if f.open]

    async def turns(self, n: int) -> None:
        for _ in range(n):
            await asyncio.sleep(0)
        self.read_all()

    def read_all(self) -> None:
        """Take every frame written so far, without waiting."""
        for f in self.live_frontends():
            while not f.comm.output_queue.empty():
                self.on_frontend_frame(f, f.comm.output_queue.get_nowait())
        self.read_queriers()

    def on_frontend_frame(self, f: Frontend, output: dict[str, Any]) -> None:
        assert output["type"] == "websocket.send", output
        frame = json.loads(output["text"])
        kind, rid = frame["type"], frame.get("id")
        if kind == "enqueued":
            assert f.ends[rid] == f.acks[rid], f"{rid} accepted again before it ended"
            f.acks[rid] += 1
        elif kind in ENDS:
            assert f.ends[rid] < f.acks[rid], f"{kind} for {rid}, which has no acceptance left"
            assert kind != "cancelled" or rid in f.cancels, f"cancelled {rid} unasked"
            f.ends[rid] += 1
        elif kind != "rejected":
            # An `error` answers a cancel that came after the end, or an id
            # enqueued again while pending: nothing else.
            assert kind == "error" and rid in f.cancels | f.duplicates, frame

    # Whether a consumer stops waiting in the same step as the runtime lets
    # a request go. Through a gRPC querier the result reaches the frontend
    # in a task of its own, so the two agree only once the run has settled.
    waiting_follows_at_once = True

    def answered_elsewhere(self, request: Request) -> bool:
        """A request the runtime may still hold after its frontend had the result."""
        return False

    def check_holdings(self, *, settled: bool = False) -> None:
        """The runtime's websocket requests are exactly the consumers' pending ones."""
        queue = self.runtime.queue
        held = [*queue.listing().queued(), *queue.in_flight_requests()]
        for request in held:
            handle = request.payload
            if not isinstance(handle, WebsocketReplyHandle):
                continue  # a Cortex frontend's: `ChaosRun` follows websocket frontends only
            waited = handle.consumer.pending.get(handle.client_id) is request
            assert waited or self.answered_elsewhere(request), (
                f"{request.id} is held for a frontend that no longer waits for it"
            )
        if not (settled or self.waiting_follows_at_once):
            return
        ids = {id(request) for request in held}
        for consumer in self.consumers:
            for client_id, request in consumer.pending.items():
                assert id(request) in ids, f"{client_id} ({request.id}) is waited for but gone"

    async def enqueue(self, f: Frontend, rid: int) -> None:
        self.sends += 1
        headers = {SEND_HEADER: str(self.sends)}
        actor = self.rng.choice(ACTORS)
        if actor:
            headers[ACTOR_HEADER] = actor
        msg = {
            "type": "enqueue",
            "id": rid,
            "tenant": self.rng.choice(TENANTS),
            "query": self.rng.choice(QUERIES),
            "headers": headers,
        }
        await f.comm.send_json_to(msg)
        self.log.append(f"frontend {self.frontends.index(f)} enqueues {rid} (send {self.sends})")

    async def cancel(self) -> None:
        candidates = [(f, i) for f in self.live_frontends() for i in f.unfinished()]
        if not candidates:
            return
        f, rid = self.rng.choice(candidates)
        f.cancels.add(rid)
        await f.comm.send_json_to({"type": "cancel", "id": rid})
        self.log.append(f"frontend {self.frontends.index(f)} cancels {rid}")

    async def hostile(self) -> None:
        """A pending id enqueued again (refused, or taken once it ended), or a querier's."""
        pending = [(f, i) for f in self.live_frontends() for i in f.unfinished()]
        if pending and self.rng.random() < 0.5:
            f, rid = self.rng.choice(pending)
            f.duplicates.add(rid)
            await self.enqueue(f, rid)
        else:
            await self.hostile_querier()

    async def revoke(self) -> None:
        """A socket's token is revoked: it closes as the registry closes it, then disconnects."""
        f = self.rng.choice(self.live_frontends())
        self.read_all()
        f.open = False
        await self.consumers[self.frontends.index(f)].token_revoked()
        await f.comm.send_input({"type": "websocket.disconnect", "code": 4001})
        self.log.append(f"frontend {self.frontends.index(f)}'s token is revoked")

    async def close_frontend(self) -> None:
        f = self.rng.choice(self.live_frontends())
        self.read_all()
        f.open = False
        await f.comm.send_input({"type": "websocket.disconnect", "code": 1000})
        self.log.append(f"frontend {self.frontends.index(f)} closes with {f.unfinished()}")

    # -- the run --------------------------------------------------------------------

    async def step(self) -> None:
        live = len(self.live_frontends())
        if live < 1 or (live < 3 and self.rng.random() < 0.02):
            await self.open_frontend()
        queriers = len([q for q in self.live_queriers() if q.name not in self.leaving])
        if queriers < 1 or (queriers < 3 and self.rng.random() < 0.03):
            await self.open_querier()
        roll = self.rng.random()
        if roll < 0.38:
            self.rid += 1
            await self.enqueue(self.rng.choice(self.live_frontends()), self.rid)
        elif roll < 0.44:
            await self.cancel()
        elif roll < 0.71:
            await self.answer()
        elif roll < 0.74:
            await self.operator_cancel()
        elif roll < 0.80:
            await self.answer(then_close=True)
        elif roll < 0.85:
            await self.close_querier()
        elif roll < 0.88:
            await self.close_frontend()
        elif roll < 0.91:
            await self.hostile()
        elif roll < 0.95:
            self.retune()
        elif roll < 0.97:
            await self.shutdown_querier()
        elif roll < 0.98:
            await self.revoke()
        elif roll < 0.99:
            await self.revoke_querier()
        else:
            self.reconfigure()
        await self.turns(self.rng.choice((0, 0, 1, 1, 2, 5)))
        await self.leave()
        self.check_holdings()

    async def play(self, steps: int) -> str:
        """The steps, then an ending: answering what is left, or a shutdown."""
        for _ in range(steps):
            await self.step()
        if self.seed % 3 == 0:
            await runtime_host.shutdown(drain_timeout=0)
            await self.turns(10)
            return "shutdown"
        await self.finish_by_answering()
        return "answering"

    def settled(self) -> bool:
        return not len(self.runtime.queue) and not self.runtime.queue.in_flight_count()

    def verify(self, ending: str) -> None:
        self.read_all()
        self.check_holdings(settled=True)
        why = f"seed {self.seed}, ending by {ending}; last steps:\n" + "\n".join(self.log[-40:])
        assert self.settled(), why
        assert self.handed_after_answer == [], why
        for n, f in enumerate(self.frontends):
            # Each frame was checked as it came (no end without an acceptance);
            # a frontend still open has an end for every acceptance.
            if f.open:
                assert f.unfinished() == [], f"frontend {n}: no end for {f.unfinished()}; {why}"

    async def close_frontends(self) -> None:
        for f in self.frontends:
            # A consumer that died of an error fails here, naming it.
            await f.comm.send_input({"type": "websocket.disconnect", "code": 1000})
            await f.comm.wait(timeout=5)
