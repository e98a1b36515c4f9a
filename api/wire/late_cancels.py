"""A peer's part of a cancel that it carried out after its asker stopped waiting: recorded here.

A cancel across replicas is recorded on History by the replica it was asked
of, with the replicas that answered in time. A peer hears a change only
before the asker's deadline (`QueuePeers._dispatch` drops it after), but the
work can outlast the deadline: cancelling 120,000 queued requests took
longer than `QUEUE_PEER_TIMEOUT`, the asker answered and recorded its own
3 with the peer named missing, and the peer's 120,000 cancels, which
happened, were on no record. Now such a peer records its own part: the
operator's name, source and note come with the question (`audit`), and the
note says whose part it is and why it has a row of its own.

The peer judges "after" on the asker's clock when it is done. An asker
whose loop was held past its deadline (another cancel of 20,000 requests)
gave up on a reply that was already on its way, sent in time: the peer
recorded nothing, the asker dropped the reply, and the cancel was on no
record. So a reply says whether its peer recorded its part
(`recorded`), and the asker keeps the change questions it gave up on for
a while (`GaveUp`): a reply to one that its peer did not record, the
asker records.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async

from api.store import services

__all__ = ["GaveUp", "audit_args", "record_late_part"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Named:
    """The operator as the asker named them (`author_fields` reads these two)."""

    name: str
    is_authenticated: bool = True

    def get_username(self) -> str:
        return self.name


def audit_args(who: str, source: str, note: str) -> dict[str, Any]:
    """What a change question carries for a late peer's record."""
    return {"audit": {"who": who, "source": source, "note": note}}


def _part(op: str, args: dict[str, Any], body: Any) -> dict[str, Any] | None:
    """The record's fields for what the peer did; None when it did nothing."""
    if op == "cancel_one" and isinstance(body, dict) and "id" in body:
        return {"request_id": str(args.get("id", "")), "matched": 1, "cancelled": 1}
    if op == "cancel_matching" and not args.get("dry_run") and isinstance(body, list):
        matched, cancelled = body
        if matched:
            shown = {k: v for k, v in (args.get("filter") or {}).items() if v not in (None, "")}
            return {"filter": shown, "matched": matched, "cancelled": cancelled}
    return None


async def record_late_part(own: str, asker: str, op: str, args: dict[str, Any], body: Any) -> None:
    """Record on History what this replica cancelled for `asker` after it stopped waiting."""
    part = _part(op, args, body)
    if part is None:
        return
    audit = args.get("audit") or {}
    who = str(audit.get("who") or "")
    note = f"{own}'s part, done after {asker} stopped waiting for it"
    if audit.get("note"):
        note += f": {audit['note']}"
    log.warning("queue peers: a %s asked on %s ended after it stopped waiting; recorded", op, asker)
    await database_sync_to_async(services.operator_cancel_record)(
        author=_Named(who) if who else None,
        source=str(audit.get("source") or "api"),
        note=note,
        replicas=[own],
        **part,
    )


# How long an asker keeps a change question it gave up on: far past any
# deadline, as a loop held up (the only way a reply sent in time comes
# this late) is held seconds, not minutes.
KEEP_SECONDS = 300.0


@dataclass(frozen=True, slots=True)
class _Question:
    op: str
    args: dict[str, Any]
    unanswered: set[str]
    at: float


class GaveUp:
    """The change questions an asker stopped waiting for, with the peers that had not answered."""

    def __init__(self) -> None:
        self._questions: OrderedDict[str, _Question] = OrderedDict()

    def note(self, rid: str, op: str, args: dict[str, Any], unanswered: set[str]) -> None:
        now = time.monotonic()
        questions = self._questions
        while questions and now - next(iter(questions.values())).at > KEEP_SECONDS:
            questions.popitem(last=False)
        if unanswered:
            questions[rid] = _Question(op, args, set(unanswered), now)

    def late_reply(self, rid: str, replica: str, message: dict[str, Any]) -> _Question | None:
        """The question a late reply answers, when the asker is to record the part.

        Once per replica; never when the peer recorded it itself, nor for a
        reply from a peer too old to say (its part is then on no record, as
        before).
        """
        question = self._questions.get(rid)
        if question is None or replica not in question.unanswered:
            return None
        question.unanswered.discard(replica)
        return question if message.get("recorded") is False else None
