"""The config this replica's scheduler runs, and whether it can still keep it current.

`queue_inspector_config_version`: the config version (History numbers every
change by it, #N). On a dashboard a change of it marks when a config change
took effect (deploy/grafana's annotation); across replicas, different values
for long mean one of them stopped applying changes (the
`QueueInspectorConfigVersionSkew` alert).

A replica alone has no peer to differ from, and its periodic reconcile with
the database (api.wire.runtime_host) only logged its failures, so it could
run a stale config unnoticed. `ReconcileRecord` keeps how those passes fare:
`queue_inspector_config_reconcile_failures_total` counts the failed ones,
and `queue_inspector_config_last_reconcile_success_timestamp_seconds` is
when one last found the runtime equal to the database's config (the
`QueueInspectorConfigStale` alert; a pass that hangs leaves it old too).
All is read from the runtime host at scrape time: nothing per request.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

from api.wire.exposition import RowFamily
from api.wire.loop_metrics import Build, LoopBoundCollector

__all__ = ["ConfigVersionCollector", "ReconcileRecord"]


class ReconcileRecord:
    """How the host's reconciles with the database fared: failures, and the last success."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        # Wall-clock time: Prometheus compares the timestamp with its own time().
        self._clock = clock
        self.failures = 0
        self.last_success: float | None = None

    @contextlib.contextmanager
    def attempt(self) -> Iterator[None]:
        """Record the body as one reconcile: a failure if it raises, else a success.

        A cancellation (the host stopping) is neither.
        """
        try:
            yield
        except Exception:
            self.failures += 1
            raise
        self.last_success = self._clock()


class ConfigVersionCollector(LoopBoundCollector):
    """The version gauge (no sample while no config is applied yet) and the reconcile record's."""

    def __init__(
        self,
        version: Callable[[], int | None],
        reconciles: Callable[[], ReconcileRecord | None],
    ) -> None:
        self._version = version
        self._reconciles = reconciles

    def take(self) -> Build:
        version = self._version()
        record = self._reconciles()
        failures = record.failures if record is not None else 0
        last_success = record.last_success if record is not None else None

        def build() -> list[RowFamily]:
            family = RowFamily(
                "queue_inspector_config_version",
                "The config version (History's #N) this replica's scheduler runs.",
                "gauge",
            )
            if version is not None:
                family.add_metric([], float(version))
            failed = RowFamily(
                "queue_inspector_config_reconcile_failures_total",
                "Reconciles of the running config with the database that failed "
                "(database unreachable, or the new config failed to apply).",
                "counter",
            )
            failed.add_metric([], float(failures))
            succeeded = RowFamily(
                "queue_inspector_config_last_reconcile_success_timestamp_seconds",
                "Unix time of the last reconcile that found the running config equal to "
                "the database's (applied what changed, or nothing had); none before the first.",
                "gauge",
            )
            if last_success is not None:
                succeeded.add_metric([], last_success)
            return [family, failed, succeeded]

        return build
