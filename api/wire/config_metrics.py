"""`queue_inspector_config_version`: the config version this replica's scheduler runs.

History numbers every change by this version (#N). On a dashboard a change
of it marks when a config change took effect (deploy/grafana's annotation);
across replicas, different values for long mean one of them stopped applying
changes (the `QueueInspectorConfigVersionSkew` alert). Read from the runtime
host at scrape time: nothing per request.
"""

from __future__ import annotations

from collections.abc import Callable

from api.wire.exposition import RowFamily
from api.wire.loop_metrics import Build, LoopBoundCollector

__all__ = ["ConfigVersionCollector"]


class ConfigVersionCollector(LoopBoundCollector):
    """The gauge, with no sample while the runtime has applied no config yet."""

    def __init__(self, version: Callable[[], int | None]) -> None:
        self._version = version

    def take(self) -> Build:
        version = self._version()

        def build() -> list[RowFamily]:
            family = RowFamily(
                "queue_inspector_config_version",
                "The config version (History's #N) this replica's scheduler runs.",
                "gauge",
            )
            if version is not None:
                family.add_metric([], float(version))
            return [family]

        return build
