"""The broadcaster's source in a running server: the scheduler runtime host.

Everything a tick needs from the host is read in `snapshot()` and kept until
the next one, so one tick reads the runtime, the replica board and the
frontend registry exactly once however many viewers it serves.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from api.cluster.replica_stats import host_stats, merge_stats, worst_wait
from api.cluster.replicas import MergedView
from api.wire.frontends import FrontendRow
from dashboard.peer_drills import PeerDrills
from scheduler_core.snapshot import QueueSnapshot

__all__ = ["RuntimeSource"]


class RuntimeSource:
    """Reads the process's scheduler runtime and its rolling stats (runtime host).

    In scale-out mode the snapshot is the whole service's: the local queue
    live, merged with the peers' last summaries (`api.cluster.replica_board`), and
    `stats()` / `replicas()` describe that same merge until the next snapshot.
    `frontends()` stays this replica's own; the peers' come with `replicas()`.
    """

    def __init__(self) -> None:
        self._merged: MergedView | None = None
        self._frontends: list[FrontendRow] = []
        self._peer_drills = PeerDrills()

    def snapshot(self) -> QueueSnapshot | None:
        from api.cluster.replica_board import get_board
        from api.wire import runtime_host

        if not runtime_host.started():
            self._merged = None
            self._frontends = []
            return None
        local = runtime_host.get_runtime().snapshot()
        self._frontends = runtime_host.frontends()
        self._merged = get_board().view(local)
        return local if self._merged is None else self._merged.snapshot

    def stats(self) -> Mapping[str, Any] | None:
        from api.cluster.replica_board import get_board
        from api.wire import runtime_host

        if not runtime_host.started():
            return None
        # Frontends, not their streams: the header and the panel count alike.
        local = host_stats(runtime_host.get_host(), self._frontends)
        if self._merged is None:
            return {**local, "wait": worst_wait(local["wait_by_component"])}
        board = get_board()
        return merge_stats(local, board.fresh_peers(time.time()), board.own_id)

    def replicas(self) -> MergedView | None:
        return self._merged

    def replicas_down(self) -> list[str]:
        """Peers that stopped publishing without withdrawing (hung, or killed)."""
        from api.wire.queue_peers import down_peers

        return down_peers()

    def frontends(self) -> list[FrontendRow]:
        return self._frontends

    def stuck_threshold(self) -> float | None:
        from api.wire import runtime_host

        if not runtime_host.started():
            return None
        return runtime_host.get_runtime().config.stuck_threshold_seconds

    def config_version(self) -> int | None:
        """The config version this replica's scheduler runs (None before its first)."""
        from api.wire import runtime_host

        return runtime_host.config_version()

    def drill_page(self, params: Any, budget: Any = None) -> Any:
        """This replica's drill page (`dashboard.drill.build_page`), on the loop.

        `budget` is the tick's `DrillBudget`, shared by the tick's pages.
        """
        from api.cluster.replica_board import get_board
        from api.wire import runtime_host
        from dashboard.drill import build_page

        if not runtime_host.started():
            return None
        names = {row.address: row.name for row in self._frontends if row.transport == "grpc"}
        board = get_board()
        page = build_page(runtime_host.get_runtime(), params, names, board.own_id, budget)
        if self._merged is None:
            return page
        # Scale-out: the peers' rows too, from their last answers (asked in the background).
        peers = runtime_host.get_host().queue_peers
        return self._peer_drills.merge(params, page, board.own_id, peers)
