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
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async

from api.store import services

__all__ = ["audit_args", "record_late_part"]

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
