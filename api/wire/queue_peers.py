"""Listing, finding and cancelling requests across replicas, over the channel layer.

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

Merged listings: a page takes queued rows replica by replica (replicas in
ID order), each in its own dequeue order, then running rows the same way.
Replicas dequeue in parallel, so there is no one order across them; this
one is stable and exact per replica. The merged cursor says which phase,
which replica and that replica's own cursor; `total` sums every replica's
count. A cancel by filter reaches every replica; a cancel by id reaches the
one replica holding that id, and is refused (`AmbiguousRequest`) when ids
repeat and no `replica=` names one. A cancel is asked with a deadline: a
replica that hears it after the asker gave up (hung, then resumed) drops
it, so a cancel reported as not done never happens later, unrecorded.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import os
import time
import uuid
from dataclasses import asdict
from typing import Any

from channels.layers import get_channel_layer

from api.cluster.replica_board import get_board
from api.wire import queue_requests
from api.wire.queue_rows import QUERY_TEXT_LIMIT, RequestFilter

__all__ = ["QUEUE_GROUP", "AmbiguousRequest", "QueuePeers", "down_peers", "live_peers", "merged"]

log = logging.getLogger(__name__)

QUEUE_GROUP = "scheduler-queue"
_PHASES = ("queued", "in_flight")
# Questions that change a queue: heard after their deadline, they are dropped.
_CHANGES = frozenset({"cancel_one", "cancel_matching"})


class AmbiguousRequest(Exception):
    """A request id held by several replicas, and no replica named: which one is meant?"""

    def __init__(self, request_id: str, replicas: list[str]) -> None:
        super().__init__(
            f"request {request_id} is on replicas {', '.join(replicas)} (ids repeat across "
            "replicas): give replica to cancel one"
        )
        self.replicas = replicas


def _timeout() -> float:
    return float(os.environ.get("QUEUE_PEER_TIMEOUT") or 2.0)


def live_peers() -> list[str]:
    """Peer replicas publishing a fresh summary (empty in single-replica mode)."""
    return sorted(p.replica for p in get_board().fresh_peers(time.time()))


def down_peers() -> list[str]:
    """Peers that stopped publishing without withdrawing: hung, or gone without a stop.

    Not asked (they cannot answer), but named in `replicas_missing`: their
    requests are absent from an answer that must not look complete.
    """
    board = get_board()
    return [r for r, up in board.replica_states() if not up and r != board.own_id]


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
            while True:
                try:
                    message = await layer.receive(self.channel)
                except Exception:
                    log.exception("queue peers: channel layer receive failed; retrying in 1s")
                    await asyncio.sleep(1.0)
                    continue
                self._dispatch(layer, message)
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
            return
        if kind != "queue.ask" or message.get("from") == self.own:
            return
        if message.get("target") not in (None, self.own):
            return
        expires = message.get("expires")
        if message.get("op") in _CHANGES and isinstance(expires, float) and time.time() > expires:
            log.warning(
                "queue peers: dropped a %s from %s heard after its asker gave up",
                message.get("op"),
                message.get("from"),
            )
            return
        task = asyncio.get_running_loop().create_task(self._reply(layer, message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _reply(self, layer: Any, message: dict[str, Any]) -> None:
        try:
            body = await self.answer(message["op"], message.get("args") or {})
        except Exception:
            log.exception("queue peers: answering %s failed", message.get("op"))
            body = {"error": "failed"}
        reply = {"type": "queue.reply", "rid": message["rid"], "replica": self.own, "body": body}
        with contextlib.suppress(Exception):
            await layer.send(message["reply"], reply)

    async def answer(self, op: str, args: dict[str, Any]) -> Any:
        """One question about this replica's own queue, answered here (JSON-ready)."""
        runtime = self.host.runtime
        names = queue_requests.grpc_names(self.host)
        flt = RequestFilter(**args["filter"]) if "filter" in args else RequestFilter()
        if op == "count":
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
            replies, missing = await self._ask(op, args, live_peers(), target)
            return replies, sorted({*missing, *down_peers()})
        return await self._ask(op, args, peers, target)

    async def _ask(
        self, op: str, args: dict[str, Any], peers: list[str], target: str | None
    ) -> tuple[dict[str, Any], list[str]]:
        expected = {target} if target is not None else set(peers)
        layer = get_channel_layer()
        if not expected:
            return {}, []
        if layer is None or self.channel is None:
            return {}, sorted(expected)
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
        answered = {r: body for r, body in replies.items() if r in expected}
        return answered, sorted(expected - answered.keys())

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


def _encode(fingerprint: str, phase: int, replica: str, sub: str | None, returned: int) -> str:
    body = json.dumps(["m", fingerprint, phase, replica, sub, returned], separators=(",", ":"))
    return base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")


def _decode(text: str, fingerprint: str) -> tuple[int, str, str | None, int]:
    try:
        value = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError):
        raise queue_requests.CursorError("not a cursor this API gave out") from None
    if not (isinstance(value, list) and len(value) == 6 and value[0] == "m"):
        raise queue_requests.CursorError(
            "not a cursor of a listing across replicas (the replica set changed?)"
        )
    _, mark, phase, replica, sub, returned = value
    if mark != fingerprint:
        raise queue_requests.CursorError("this cursor belongs to a listing with other filters")
    if not isinstance(phase, int) or not isinstance(replica, str) or not isinstance(returned, int):
        raise queue_requests.CursorError("not a cursor this API gave out")
    return phase, replica, sub, returned


class merged:  # noqa: N801 - a namespace of the merged operations
    """The REST operations over every live replica (this one first asked locally)."""

    @staticmethod
    async def page(
        peers: QueuePeers, flt: RequestFilter, cursor: str | None, limit: int
    ) -> dict[str, Any]:
        others = live_peers()
        replicas = sorted({peers.own, *others})
        args = {"filter": asdict(flt)}
        counts, absent = await peers.ask("count", args)
        missing = set(absent)
        total = await peers.answer("count", args) + sum(
            c for c in counts.values() if isinstance(c, int)
        )
        phases = [flt.state] if flt.state is not None else list(_PHASES)
        fingerprint = flt.fingerprint()
        steps = [(p, r) for p in range(len(phases)) for r in replicas]
        at, sub, returned = 0, None, 0
        if cursor:
            phase, replica, sub, returned = _decode(cursor, fingerprint)
            # The first step at or after the cursor's (a replica gone since is skipped).
            at = next((i for i, step in enumerate(steps) if step >= (phase, replica)), len(steps))
            if at == len(steps) or steps[at] != (phase, replica):
                sub = None
        rows: list[dict[str, Any]] = []
        following: str | None = None
        while at < len(steps) and len(rows) < limit:
            phase, replica = steps[at]
            state_filter = RequestFilter(**{**asdict(flt), "state": phases[phase]})
            page_args = {"filter": asdict(state_filter), "cursor": sub, "limit": limit - len(rows)}
            body, answered = await peers.one(replica, "page", page_args)
            if answered and isinstance(body, dict) and "error" in body:
                raise queue_requests.CursorError(body["error"])
            if not answered or not isinstance(body, dict):
                missing.add(replica)
                body = {"rows": [], "next": None}
            rows += body["rows"]
            if body["next"] is not None:
                following = _encode(fingerprint, phase, replica, body["next"], returned + len(rows))
                break
            at, sub = at + 1, None
        if following is None and at < len(steps):
            phase, replica = steps[at]
            following = _encode(fingerprint, phase, replica, None, returned + len(rows))
        if returned + len(rows) >= total:
            following = None
        return {
            "running": True,
            "results": rows,
            "next": following,
            "total": total,
            "replicas": replicas,
            "replicas_missing": sorted(missing),
        }

    @staticmethod
    async def find(
        peers: QueuePeers, request_id: str, replica: str | None
    ) -> tuple[dict[str, Any] | None, list[str]]:
        args = {"id": request_id}
        if replica is None or replica == peers.own:
            local = await peers.answer("find", args)
            if local is not None or replica == peers.own:
                return local, []
        replies, missing = await peers.ask("find", args, None if replica is None else [replica])
        for name in sorted(replies):
            if replies[name] is not None:
                return replies[name], missing
        return None, missing

    @staticmethod
    async def cancel_one(
        peers: QueuePeers, request_id: str, reason: str, replica: str | None
    ) -> tuple[dict[str, Any] | None, list[str]]:
        """The request's row as it was when cancelled, or None; and who did not answer.

        Without `replica`, the holder is found first: an id held by several
        replicas (websocket ids restart in every process) raises
        AmbiguousRequest rather than cancelling another tenant's request too.
        """
        missing: list[str] = []
        if replica is None:
            holders, missing = await merged._holders(peers, request_id)
            if len(holders) > 1:
                raise AmbiguousRequest(request_id, holders)
            if not holders:
                return None, missing
            replica = holders[0]
        args = {"id": request_id, "reason": reason}
        if replica == peers.own:
            return await peers.answer("cancel_one", args), missing
        replies, absent = await peers.ask("cancel_one", args, [], target=replica)
        return replies.get(replica), sorted({*missing, *absent})

    @staticmethod
    async def _holders(peers: QueuePeers, request_id: str) -> tuple[list[str], list[str]]:
        """The replicas holding `request_id`, and those that did not answer."""
        args = {"id": request_id}
        holders = [peers.own] if await peers.answer("find", args) is not None else []
        replies, missing = await peers.ask("find", args)
        holders += [name for name in sorted(replies) if replies[name] is not None]
        return sorted(holders), missing

    @staticmethod
    async def cancel_matching(
        peers: QueuePeers, flt: RequestFilter, reason: str, dry_run: bool
    ) -> tuple[int, int, list[str], list[str]]:
        """(matched, cancelled, replicas that took part, replicas that did not answer)."""
        args = {"filter": asdict(flt), "reason": reason, "dry_run": dry_run}
        local = await peers.answer("cancel_matching", args)
        replies, missing = await peers.ask("cancel_matching", args)
        matched, cancelled = local
        for answer in replies.values():
            if isinstance(answer, list) and len(answer) == 2:
                matched += answer[0]
                cancelled += answer[1]
        return matched, cancelled, sorted({peers.own, *replies}), missing
