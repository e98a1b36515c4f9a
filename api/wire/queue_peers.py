"""Asking the other replicas about their queues, over the channel layer.

Each replica holds its own queue, so only it can list or cancel its requests.
Every replica's runtime host serves `QueuePeers.serve()`: it joins the group
`scheduler-queue` on the channel layer (Redis in scale-out) and answers
`queue.ask` messages about its own queue with `queue.reply` on the asker's
channel. An asker sends one question to the group, names the replica that
must answer (or every live peer, from the replica board), and waits up to
`QUEUE_PEER_TIMEOUT` seconds (default 2); a replica that did not answer in
time is named in `replicas_missing`, never silently left out. So is a
replica that stopped publishing without withdrawing (hung, or killed): it is
not asked, but named, for as long as `queue_inspector_replica_up` says it
is down.

A cancel is asked with a deadline: a replica that hears it after the asker
gave up (hung, then resumed) drops it, so a cancel reported as not done
never happens later, unrecorded. The deadline is on the asker's clock and
read through its measured skew (`ReplicaBoard.skew`), so clocks need not
agree. So is a filter's `enqueued_before` (`on_this_clock`): the instant
a client sends is read on the clock of the replica it reached, and each
peer compares it, moved onto its own clock, with its own enqueue times.
The merged REST operations built on this (listing pages, lookups,
cancels) live in `queue_merged`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings

from api.cluster.replica_board import get_board
from api.wire import late_cancels, queue_requests
from api.wire.layer_receive import receive_retrying
from api.wire.outage_log import OutageLog
from api.wire.queue_rows import QUERY_TEXT_LIMIT, RequestFilter

__all__ = [
    "QUEUE_GROUP",
    "UNHEARD_NOTE",
    "QueuePeers",
    "down_peers",
    "live_peers",
    "on_this_clock",
    "peers_unheard",
]

log = logging.getLogger(__name__)

QUEUE_GROUP = "scheduler-queue"
# Questions that change a queue: heard after their deadline, they are dropped.
_CHANGES = frozenset({"cancel_one", "cancel_matching"})


def _timeout() -> float:
    return float(settings.QUEUE_PEER_TIMEOUT)


def live_peers() -> list[str]:
    """Peer replicas publishing a fresh summary (empty in single-replica mode)."""
    return sorted(p.replica for p in get_board().fresh_peers(time.time()))


def down_peers() -> list[str]:
    """Peers that stopped publishing without withdrawing (hung, or gone without a
    stop), and every known peer while Redis is unreachable (`unreachable_peers`).

    Not asked (they cannot answer), but named in `replicas_missing`: their
    requests are absent from an answer that must not look complete.
    """
    return get_board().unreachable_peers()


UNHEARD_NOTE = (
    "peer replicas unknown: Redis not read yet (this replica just started) or "
    "unreachable; this replica's queue only"
)


def peers_unheard() -> bool:
    """Whether this replica runs with peers (Redis) but knows none of them yet.

    The board learns its peers from the summaries loop's registry read, the
    first a moment after the runtime starts (none while Redis is
    unreachable). Until then an answer would look like a lone
    replica's, though peers may hold requests: it says so (`UNHEARD_NOTE`)
    instead. A peer once known is named missing when it cannot be read.
    """
    board = get_board()
    return bool(settings.REDIS_URL) and board.registry_at is None and not board.known_peers()


def on_this_clock(flt: RequestFilter, asker: str | None) -> RequestFilter:
    """`flt` with its instant moved from the asker's clock onto this replica's.

    The asker read the instant on its own clock (the client's
    `enqueued_before`, or the instant its dry run counted at); a request
    here was enqueued on this one. Moved by the asker's measured lead
    (`ReplicaBoard.skew`, as a cancel's deadline is), the instant is the
    same moment here, so a replica whose clock runs seconds ahead takes
    neither the requests enqueued after it nor fewer before it.
    """
    if flt.enqueued_before is None or asker is None:
        return flt
    return replace(flt, enqueued_before=flt.enqueued_before - get_board().skew(asker))


def _query_limit(raw: Any) -> int:
    """How much query text a page's rows carry (the inspector wants the first line only)."""
    if isinstance(raw, int) and not isinstance(raw, bool) and 1 <= raw <= QUERY_TEXT_LIMIT:
        return raw
    return QUERY_TEXT_LIMIT


class QueuePeers:
    """This replica's side of the conversation: answering peers, asking them."""

    def __init__(self, host: Any) -> None:
        self.host = host
        self.own = get_board().own_id
        self.channel: str | None = None
        self._waiting: dict[str, tuple[asyncio.Future[None], dict[str, Any], set[str]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._gave_up = late_cancels.GaveUp()

    # -- answering ---------------------------------------------------------------

    async def serve(self) -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        # The default prefix, as every consumer's and the config listener's
        # channel: the Redis layer receives all process-local channels of one
        # prefix through one list but holds one receive at a time, so a
        # channel of another prefix would wait while another blocks on its own.
        self.channel = await layer.new_channel()
        await layer.group_add(QUEUE_GROUP, self.channel)
        try:
            outage = OutageLog(log, "queue peers: the channel layer's receive")
            while True:
                self._dispatch(layer, await receive_retrying(layer, self.channel, outage))
        finally:
            with contextlib.suppress(Exception):
                await layer.group_discard(QUEUE_GROUP, self.channel)

    async def rejoin(self) -> None:
        """Join the group again (`RuntimeHost` calls this every few seconds)."""
        layer = get_channel_layer()
        if layer is not None and self.channel is not None:
            await layer.group_add(QUEUE_GROUP, self.channel)

    def _dispatch(self, layer: Any, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "queue.reply":
            waiting = self._waiting.get(message.get("rid", ""))
            if waiting is not None:
                done, replies, expected = waiting
                replies[message["replica"]] = message.get("body")
                if expected <= replies.keys() and not done.done():
                    done.set_result(None)
            else:
                self._reply_after_giving_up(message)
            return
        if kind != "queue.ask" or message.get("from") == self.own:
            return
        if message.get("target") not in (None, self.own):
            return
        if self._change_too_late(message):
            log.warning(
                "queue peers: dropped a %s from %s heard after its asker gave up",
                message.get("op"),
                message.get("from"),
            )
            return
        task = asyncio.get_running_loop().create_task(self._reply(layer, message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _reply_after_giving_up(self, message: dict[str, Any]) -> None:
        """A peer's part of a change this replica stopped waiting for: recorded here,
        unless the peer recorded it (`late_cancels`)."""
        replica = message.get("replica")
        if not isinstance(replica, str):
            return
        question = self._gave_up.late_reply(str(message.get("rid", "")), replica, message)
        if question is None:
            return
        record = self._record_late(
            replica, self.own, question.op, question.args, message.get("body")
        )
        task = asyncio.get_running_loop().create_task(record)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _record_late(
        replica: str, asker: str, op: str, args: dict[str, Any], body: Any
    ) -> None:
        """`replica`'s part of `asker`'s change, done after `asker` stopped waiting, on History."""
        try:
            await late_cancels.record_late_part(replica, asker, op, args, body)
        except Exception:
            log.exception("queue peers: recording a late %s failed", op)

    @classmethod
    def _change_too_late(cls, message: dict[str, Any]) -> bool:
        """Whether `message` asks for a change (a cancel) and its asker has given up."""
        changes = message.get("op") in _CHANGES
        return changes and isinstance(message.get("expires"), float) and cls._late(message)

    @staticmethod
    def _late(message: dict[str, Any]) -> bool:
        """Whether the asker has given up: its deadline, on the asker's clock, has passed.

        Read on this clock through the asker's measured skew: a replica whose
        clock was seconds behind the asker's dropped every cancel as late.
        """
        asker = message.get("from")
        skew = get_board().skew(asker) if isinstance(asker, str) else 0.0
        return bool(time.time() + skew > message["expires"])

    async def _reply(self, layer: Any, message: dict[str, Any]) -> None:
        asker = message.get("from")
        try:
            body = await self.answer(
                message["op"],
                message.get("args") or {},
                asker=asker if isinstance(asker, str) else None,
            )
        except Exception:
            log.exception("queue peers: answering %s failed", message.get("op"))
            body = {"error": "failed"}
        # Judged once: the reply says so, and the asker, if it gave up all the
        # same (its loop held past the deadline), records what is not.
        late = self._change_too_late(message)
        reply = {
            "type": "queue.reply",
            "rid": message["rid"],
            "replica": self.own,
            "body": body,
            "recorded": late,
        }
        with contextlib.suppress(Exception):
            await layer.send(message["reply"], reply)
        if late:
            # Heard in time, done too late: the asker recorded us as missing.
            op, args = message["op"], message.get("args") or {}
            await self._record_late(self.own, str(asker), op, args, body)

    async def answer(self, op: str, args: dict[str, Any], asker: str | None = None) -> Any:
        """One question about this replica's own queue, answered here (JSON-ready).

        `asker`: the peer that asked (None: this replica), on whose clock
        the filter's instant is.
        """
        runtime = self.host.runtime
        names = queue_requests.grpc_names(self.host)
        flt = RequestFilter(**args["filter"]) if "filter" in args else RequestFilter()
        flt = on_this_clock(flt, asker)
        if op == "count":
            if args.get("phases"):
                # [queued, running]: an asker of an older version sends no
                # `phases` and reads one number, as this replica's did.
                return list(await queue_requests.count_phases(runtime, flt, names))
            return await queue_requests.count_matching(runtime, flt, names)
        if op == "page":
            try:
                page = await queue_requests.list_page(
                    runtime,
                    flt,
                    cursor=args.get("cursor"),
                    limit=int(args["limit"]),
                    replica=self.own,
                    names=names,
                    query_limit=_query_limit(args.get("query_limit")),
                )
            except queue_requests.CursorError as exc:
                return {"error": str(exc)}
            return {"rows": page.rows, "next": page.next, "total": page.total}
        if op == "find":
            return queue_requests.find_row(runtime, args["id"], replica=self.own, names=names)
        if op == "cancel_one":
            return queue_requests.cancel_one(
                runtime,
                args["id"],
                args["reason"],
                replica=self.own,
                names=names,
                answered=queue_requests.answered_check(self.host),
            )
        if op == "cancel_matching":
            return list(
                await queue_requests.cancel_matching(
                    runtime, flt, args["reason"], dry_run=bool(args["dry_run"]), names=names
                )
            )
        raise ValueError(f"unknown question {op!r}")

    # -- asking ------------------------------------------------------------------

    async def ask(
        self,
        op: str,
        args: dict[str, Any],
        peers: list[str] | None = None,
        target: str | None = None,
    ) -> tuple[dict[str, Any], list[str]]:
        """Every named peer's answer (or `target`'s), and the ones that did not answer.

        `peers` None asks every live peer and names the down ones (`down_peers`)
        among those that did not answer, unasked.
        """
        if peers is None:
            # Both read before the wait. A down peer whose summary turned fresh
            # while the asker waited was in neither list (not asked, no longer
            # down): the answer looked whole, and a cancel it heard from the
            # group was done there but neither counted nor recorded.
            down = down_peers()
            return await self._ask(op, args, live_peers(), target, down)
        return await self._ask(op, args, peers, target)

    async def _ask(
        self,
        op: str,
        args: dict[str, Any],
        peers: list[str],
        target: str | None,
        down: Sequence[str] = (),
    ) -> tuple[dict[str, Any], list[str]]:
        """The answers of `peers` (or `target`), and the ones missing.

        The `down` peers are not waited for, but one that answers after all
        (it heard the group) is counted: it may have acted on the question.
        """
        expected = {target} if target is not None else set(peers)
        heard = expected.union(down)
        layer = get_channel_layer()
        if not expected or layer is None or self.channel is None:
            return {}, sorted(heard)  # nobody to wait for, or no way to ask
        rid = uuid.uuid4().hex
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        replies: dict[str, Any] = {}
        self._waiting[rid] = (done, replies, expected)
        message = {
            "type": "queue.ask",
            "op": op,
            "args": args,
            "rid": rid,
            "reply": self.channel,
            "from": self.own,
            "target": target,
            "expires": time.time() + _timeout(),
        }
        try:
            # The send counts against the timeout too: a Redis that stalls
            # (CLIENT PAUSE, a failover) held the answer 9 s, not 2.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._send_and_wait(layer, message, done), _timeout())
        finally:
            del self._waiting[rid]
        answered = {r: body for r, body in replies.items() if r in heard}
        missing = heard - answered.keys()
        if op in _CHANGES:
            self._gave_up.note(rid, op, args, missing)
        return answered, sorted(missing)

    @staticmethod
    async def _send_and_wait(
        layer: Any, message: dict[str, Any], done: asyncio.Future[None]
    ) -> None:
        await layer.group_send(QUEUE_GROUP, message)
        await done

    async def one(self, replica: str, op: str, args: dict[str, Any]) -> tuple[Any, bool]:
        """`replica`'s answer (this one's own is local); False when it did not answer."""
        if replica == self.own:
            return await self.answer(op, args), True
        replies, missing = await self.ask(op, args, [], target=replica)
        return replies.get(replica), not missing
