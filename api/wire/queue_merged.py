"""Listing, finding and cancelling requests across replicas: the merged REST operations.

Built on `queue_peers.QueuePeers` (which asks the replicas). A page takes
queued rows replica by replica (replicas in ID order), each in its own
dequeue order, then running rows the same way. Replicas dequeue in parallel,
so there is no one order across them; this one is stable and exact per
replica. The merged cursor says which phase, which replica and that
replica's own cursor; `total` sums every replica's count. A page is the
last when nothing follows its position: the step it ended in is exhausted
and every later step is empty by the counts taken for the page (each
replica's split into queued and running). A count of rows handed out on
earlier pages, some of them gone since, says nothing about what follows.
A cancel by filter reaches every replica; a lookup or cancel by id reaches
the one replica holding that id, and is refused (`AmbiguousRequest`) when
ids repeat and no `replica=` names one; a `replica=` naming no replica this
one knows (itself, a live peer or a down one) is `UnknownReplica`. A dry
run (`merged.count_as_of`) counts here first, then asks the peers to count
what was enqueued by the instant it counted at, so the total is of one
moment (`queue_peers.on_this_clock` says how each peer reads that instant).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import replace
from typing import Any

from api.wire import queue_peers, queue_requests
from api.wire.queue_peers import QueuePeers
from api.wire.queue_rows import RequestFilter

__all__ = ["AmbiguousRequest", "UnknownReplica", "known_replicas", "merged"]

_PHASES = ("queued", "in_flight")


class AmbiguousRequest(Exception):
    """A request id held by several replicas, and no replica named: which one is meant?"""

    def __init__(self, request_id: str, replicas: list[str], to: str = "cancel one") -> None:
        super().__init__(
            f"request {request_id} is on replicas {', '.join(replicas)} (ids repeat across "
            f"replicas): give replica to {to}"
        )
        self.replicas = replicas


class UnknownReplica(Exception):
    """`replica` names no replica this one knows: not itself, nor a live or a down peer.

    Asked anyway, such a name cost the peer timeout and a 503 saying it
    "did not answer", as if it might hold the request.
    """

    def __init__(self, replica: str, known: list[str]) -> None:
        super().__init__(f"no replica named {replica!r}; known: {', '.join(known)}")
        self.replica = replica
        self.known = known


def known_replicas(own: str) -> list[str]:
    """This replica, its live peers and its down ones (`queue_peers.down_peers`), sorted."""
    return sorted({own, *queue_peers.live_peers(), *queue_peers.down_peers()})


def _check_named(own: str, replica: str | None) -> None:
    if replica is not None and replica not in (known := known_replicas(own)):
        raise UnknownReplica(replica, known)


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


def _sum(count: Any) -> int:
    """A replica's count: [queued, running], or one number (a peer of an older version)."""
    if isinstance(count, list):
        return sum(c for c in count if isinstance(c, int))
    return count if isinstance(count, int) else 0


def _holds(count: Any, phase: str) -> bool:
    """Whether a replica may hold rows of `phase`, by its count (one number: of any
    phase; no count read: it may)."""
    if isinstance(count, list) and len(count) == 2:
        return bool(count[_PHASES.index(phase)])
    if isinstance(count, int):
        return count > 0
    return True


class merged:  # noqa: N801 - a namespace of the merged operations
    """The REST operations over every live replica (this one first asked locally)."""

    @staticmethod
    async def page(
        peers: QueuePeers, flt: RequestFilter, cursor: str | None, limit: int
    ) -> dict[str, Any]:
        others = queue_peers.live_peers()
        # Split by phase ([queued, running]); a peer of an older version
        # answers one number.
        args = {"filter": flt.as_args(), "phases": True}
        counts, absent = await peers.ask("count", args)
        missing = set(absent)
        counts[peers.own] = await peers.answer("count", args)
        # A peer down when asked that answered all the same is listed too.
        replicas = sorted({*others, *counts})
        total = sum(_sum(c) for c in counts.values())
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
            if replica in missing:
                # It did not answer the count: asking it for each phase's
                # rows would cost the timeout again and again (a hung peer
                # held a listing 6 s, not 2), and its count is absent anyway.
                at, sub = at + 1, None
                continue
            state_filter = replace(flt, state=phases[phase])
            page_args = {
                "filter": state_filter.as_args(),
                "cursor": sub,
                "limit": limit - len(rows),
            }
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
        # The page ended with a step exhausted: the next page starts at the
        # first later step that holds anything (none: this is the last page).
        while following is None and at < len(steps):
            phase, replica = steps[at]
            if replica not in missing and _holds(counts.get(replica), phases[phase]):
                following = _encode(fingerprint, phase, replica, None, returned + len(rows))
            at += 1
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
        """The request's row, or None; and who did not answer.

        Without `replica`, every replica is asked, as a cancel by id finds
        its holder: an id several hold (websocket ids restart in every
        process) raises AmbiguousRequest, rather than answering with this
        replica's request when another's was meant.
        """
        _check_named(peers.own, replica)
        args = {"id": request_id}
        if replica is None:
            rows, missing = await merged._held(peers, request_id)
            if len(rows) > 1:
                raise AmbiguousRequest(request_id, sorted(rows), to="look at one")
            return next(iter(rows.values()), None), missing
        if replica == peers.own:
            return await peers.answer("find", args), []
        replies, missing = await peers.ask("find", args, [replica])
        return replies.get(replica), missing

    @staticmethod
    async def cancel_one(
        peers: QueuePeers,
        request_id: str,
        reason: str,
        replica: str | None,
        audit: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any] | None, list[str]]:
        """The request's row as it was when cancelled, or None; and who did not answer.

        Without `replica`, the holder is found first: an id held by several
        replicas (websocket ids restart in every process) raises
        AmbiguousRequest rather than cancelling another tenant's request too.
        """
        _check_named(peers.own, replica)
        missing: list[str] = []
        if replica is None:
            holders, missing = await merged._holders(peers, request_id)
            if len(holders) > 1:
                raise AmbiguousRequest(request_id, holders)
            if not holders:
                return None, missing
            replica = holders[0]
        args = {"id": request_id, "reason": reason, **(audit or {})}
        if replica == peers.own:
            return await peers.answer("cancel_one", args), missing
        replies, absent = await peers.ask("cancel_one", args, [], target=replica)
        return replies.get(replica), sorted({*missing, *absent})

    @staticmethod
    async def _holders(peers: QueuePeers, request_id: str) -> tuple[list[str], list[str]]:
        """The replicas holding `request_id`, and those that did not answer."""
        rows, missing = await merged._held(peers, request_id)
        return sorted(rows), missing

    @staticmethod
    async def _held(
        peers: QueuePeers, request_id: str
    ) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """Each replica holding `request_id` -> its row; and the replicas that did not answer."""
        args = {"id": request_id}
        local = await peers.answer("find", args)
        rows = {} if local is None else {peers.own: local}
        replies, missing = await peers.ask("find", args)
        rows.update((name, row) for name, row in replies.items() if row is not None)
        return dict(sorted(rows.items())), missing

    @staticmethod
    async def cancel_matching(
        peers: QueuePeers,
        flt: RequestFilter,
        reason: str,
        dry_run: bool,
        audit: dict[str, Any] | None = None,
    ) -> tuple[int, int, list[str], list[str]]:
        """(matched, cancelled, replicas that took part, replicas that did not answer).

        `audit` (`late_cancels.audit_args`) lets a peer that finishes after
        this replica stopped waiting record its own part.
        """
        args = {"filter": flt.as_args(), "reason": reason, "dry_run": dry_run, **(audit or {})}
        local = await peers.answer("cancel_matching", args)
        replies, missing = await peers.ask("cancel_matching", args)
        matched, cancelled = local
        for answer in replies.values():
            if isinstance(answer, list) and len(answer) == 2:
                matched += answer[0]
                cancelled += answer[1]
        return matched, cancelled, sorted({peers.own, *replies}), missing

    @staticmethod
    async def count_as_of(
        peers: QueuePeers, flt: RequestFilter
    ) -> tuple[int, float, list[str], list[str]]:
        """A dry run: (matched, the instant counted at, replicas that took part, did not answer).

        The peers count with that instant as `enqueued_before`: a request
        reaching a peer while the question travels is not in the count, as
        a cancel given the instant would not take it.
        """
        host = peers.host
        names = queue_requests.grpc_names(host)
        matched, as_of = await queue_requests.count_as_of(host.runtime, flt, names)
        args = {"filter": flt.by(as_of).as_args(), "reason": "", "dry_run": True}
        replies, missing = await peers.ask("cancel_matching", args)
        for answer in replies.values():
            if isinstance(answer, list) and len(answer) == 2:
                matched += answer[0]
        return matched, as_of, sorted({peers.own, *replies}), missing
