"""The other replicas' rows of each open drill-down, for the live inspector in scale-out.

Each replica holds its own queue, so a node's drill-down lists what every
replica holds under it. This replica's rows are built on every tick
(`dashboard.drill.build_page`); the peers' come from "page" questions over
the channel layer (`api.wire.queue_peers`), asked in the background at most
every `REFRESH_SECONDS` per distinct drill while a browser has it open, so
a tick never waits on the network. Their rows are turned into the drill's
row arrays here and keep their "since" instants from one answer to the next
(within `SINCE_SLACK`), so an unchanged peer row stays the same bytes and
goes to the browser as a reference. The merged page lists queued rows
replica by replica (in replica ID order), then running rows the same way:
the REST API's order. A replica that did not answer the last question is
named in `replicas_missing`; until the first answers arrive the page says
`replicas_pending`.

Imports: `api.wire` (the peers, the row filter), `dashboard.drill`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from api.wire.queue_rows import QUERY_LINE_LIMIT
from dashboard.drill import DrillParams, encode_api_row, row_key

__all__ = ["FORGET_SECONDS", "REFRESH_SECONDS", "SINCE_SLACK", "PeerDrills"]

log = logging.getLogger(__name__)

REFRESH_SECONDS = 1.0
FORGET_SECONDS = 10.0  # a drill nobody merged for this long is dropped
SINCE_SLACK = 1.0  # seconds a re-answered row's "since" may move and be kept


@dataclass
class _Answers:
    """The peers' last answers for one drill."""

    used: float
    asked: float = float("-inf")
    task: asyncio.Task[None] | None = None
    answered: bool = False
    # replica -> (queued rows, running rows) as (key, text), and its total
    rows: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = field(
        default_factory=dict
    )
    totals: dict[str, int] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    since: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)


class PeerDrills:
    """Per distinct drill, the peers' rows, refreshed in the background."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._clock = clock
        self._wall = wall_clock
        self._drills: dict[DrillParams, _Answers] = {}

    def merge(
        self, params: DrillParams, local: dict[str, Any], own: str, peers: Any
    ) -> dict[str, Any]:
        """`local` (this replica's page) with the peers' last rows; asks again when due.

        `peers` is the runtime host's `QueuePeers` (its `ask`).
        """
        now = self._clock()
        self._forget(now)
        entry = self._drills.get(params)
        if entry is None:
            entry = self._drills[params] = _Answers(used=now)
        entry.used = now
        if entry.task is None and now - entry.asked >= REFRESH_SECONDS:
            with contextlib.suppress(RuntimeError):  # no running loop: nothing to ask with
                entry.task = asyncio.get_running_loop().create_task(self._ask(entry, params, peers))
                entry.asked = now
        split = local.get("queued_rows", len(local["rows"]))
        parts = dict(entry.rows)
        parts[own] = (local["rows"][:split], local["rows"][split:])
        order = sorted(parts)
        rows = [row for r in order for row in parts[r][0]]
        rows += [row for r in order for row in parts[r][1]]
        page = {
            "rows": rows[: params.limit],
            "total": local["total"] + sum(entry.totals.values()),
            "exact": local["exact"],
            "replicas_missing": list(entry.missing),
        }
        if not entry.answered:
            page["replicas_pending"] = True
        if "counted_at" in local:
            # This replica's count finished then; the peers' totals are their
            # own latest answers, each exact when it was made.
            page["counted_at"] = local["counted_at"]
        if "serving" in local:  # queriers connect to every replica: this one's view serves
            page["serving"] = local["serving"]
        # No `tenant_running`: this replica's count alone would be short of
        # the service's, and the peers' answers do not carry theirs. The
        # panel keeps the header's usage figure, merged from every replica
        # (their rows here are up to REFRESH_SECONDS old just the same).
        return page

    def _forget(self, now: float) -> None:
        for params in [p for p, e in self._drills.items() if now - e.used > FORGET_SECONDS]:
            entry = self._drills.pop(params)
            if entry.task is not None:
                entry.task.cancel()

    async def _ask(self, entry: _Answers, params: DrillParams, peers: Any) -> None:
        args = {
            "filter": asdict(params.filter),
            "cursor": None,
            "limit": params.limit,
            "query_limit": QUERY_LINE_LIMIT + 1,
        }
        try:
            # Every live peer; a hung or killed one is named missing, unasked.
            replies, missing = await peers.ask("page", args)
            self._take(entry, replies, missing, self._wall())
        except Exception:
            log.exception("drill-down: asking the other replicas failed")
        finally:
            entry.task = None

    def _take(
        self, entry: _Answers, replies: dict[str, Any], missing: list[str], wall: float
    ) -> None:
        rows: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {}
        totals: dict[str, int] = {}
        since: dict[str, tuple[float | None, float | None]] = {}
        gone = set(missing)
        for replica, body in replies.items():
            if not (isinstance(body, dict) and isinstance(body.get("rows"), list)):
                gone.add(replica)  # an error answer ("error": ...) lists nothing
                continue
            queued: list[tuple[str, str]] = []
            running: list[tuple[str, str]] = []
            for row in body["rows"]:
                key = row_key(replica, row["id"])
                old_queued, old_running = entry.since.get(key, (None, None))
                running_for = row.get("running_seconds")
                run_since = None
                if running_for is None:
                    queued_since = _kept(wall - row["wait_seconds"], old_queued)
                else:
                    # A running row's wait is fixed: it was queued before it ran.
                    run_since = _kept(wall - running_for, old_running)
                    queued_since = _kept(wall - running_for - row["wait_seconds"], old_queued)
                since[key] = (queued_since, run_since)
                text = encode_api_row(row, queued_since, run_since)
                (running if row["state"] == "in_flight" else queued).append((key, text))
            rows[replica] = (queued, running)
            totals[replica] = int(body.get("total") or 0)
        entry.rows, entry.totals, entry.since = rows, totals, since
        entry.missing = sorted(gone)
        entry.answered = True


def _kept(new: float, old: float | None) -> float:
    """The earlier answer's instant when the new one is within the slack (stable bytes)."""
    if old is not None and abs(new - old) <= SINCE_SLACK:
        return old
    return round(new, 2)
