"""Stored config that no longer validates: `queue_inspector_invalid_stored_configs`.

Validation tightens between versions (int64 and duration bounds, regexes
RE2 takes): a block saved by an older version can fail after an upgrade.
The scheduler then runs that tenant (or, for the settings, every tenant)
under the default limits (`api.store.selectors`), which can change how it
is scheduled: no shard, no priorities, no rejection rules, no cap. The gauge
counts such blocks by `kind` ("tenant": tenant blocks, "settings": 0 or 1),
as this replica last applied them, so an alert can say so; the Tenants page
names them and their errors. Read from the runtime host at scrape time.
"""

from __future__ import annotations

from collections.abc import Callable

from api.wire import runtime_host
from api.wire.exposition import RowFamily
from api.wire.loop_metrics import Build, LoopBoundCollector

__all__ = ["InvalidConfigCollector", "host_invalid_stored"]


def host_invalid_stored() -> tuple[bool, int] | None:
    """The running host's (settings invalid, invalid tenant blocks).

    None until it has applied a config: nothing is known of the blocks yet.
    """
    if runtime_host.config_version() is None:
        return None
    return runtime_host.get_host().invalid_stored()


class InvalidConfigCollector(LoopBoundCollector):
    """The gauge; no sample while `invalid` gives None."""

    def __init__(self, invalid: Callable[[], tuple[bool, int] | None]) -> None:
        self._invalid = invalid

    def take(self) -> Build:
        invalid = self._invalid()

        def build() -> list[RowFamily]:
            family = RowFamily(
                "queue_inspector_invalid_stored_configs",
                "Stored config blocks that no longer validate (saved by an older version), "
                "run under the default limits until saved again: tenant blocks, and the "
                "scheduler settings (0 or 1).",
                "gauge",
                labels=["kind"],
            )
            if invalid is not None:
                settings, tenants = invalid
                family.add_metric(["tenant"], float(tenants))
                family.add_metric(["settings"], float(settings))
            return [family]

        return build
