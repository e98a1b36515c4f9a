"""Forgetting the per-tenant `/metrics` series of tenants that went quiet.

Counters labelled by tenant (`user`) would otherwise keep a series for every
tenant ID ever seen: a frontend sending 20,000 made-up tenant IDs left
40,000 series behind, in every scrape, for good. As Cortex and Mimir do for
inactive users (their active-users cleanup: inactive after 15 minutes), a
tenant's series are removed once it has had nothing queued or in flight for
`METRICS_TENANT_IDLE_SECONDS` (default 900). A tenant that comes back starts
its counters from zero, which Prometheus reads as a counter reset.

`TenantSeriesJanitor` is the bookkeeping: the metrics observer reports each
tenant's requests starting and ending (`started`, `ended`; the runtime's
invariant that every accepted request ends exactly once keeps the count
exact), and `sweep` forgets whoever is idle past the delay through the
callbacks it was given. Time comes from the clock it is given, the
runtime's in the server and a fake one in tests; sweeps run at most once a
`sweep_interval`, from events and from each scrape, so no task is needed.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["DEFAULT_IDLE_SECONDS", "TenantSeriesJanitor"]

DEFAULT_IDLE_SECONDS = 900.0

Forget = Callable[[str], None]


class TenantSeriesJanitor:
    """Which tenants are busy, since when each is idle, and who to tell when one goes."""

    def __init__(
        self,
        clock: Callable[[], float],
        idle_seconds: Callable[[], float] | float = DEFAULT_IDLE_SECONDS,
    ) -> None:
        self._clock = clock
        self._idle_seconds = idle_seconds
        self._outstanding: dict[str, int] = {}
        self._idle_since: dict[str, float] = {}
        self._forget: list[Forget] = []
        self._last_sweep: float | None = None
        # When the next event-driven sweep is due, fixed at each sweep: the
        # check runs on every accepted request, and reading the delay (a
        # Django setting) there cost more than the rest of the bookkeeping.
        self._due = 0.0

    @property
    def idle_seconds(self) -> float:
        value = self._idle_seconds
        return float(value() if callable(value) else value)

    @property
    def sweep_interval(self) -> float:
        """A fifth of the delay (at most 3 minutes, Cortex's check period)."""
        return _sweep_interval(self.idle_seconds)

    def on_forget(self, callback: Forget) -> None:
        """Call `callback(tenant_id)` for each tenant whose series go."""
        if callback not in self._forget:
            self._forget.append(callback)

    def seen(self, tenant_id: str) -> None:
        """The tenant did something that ends at once (a refusal): idle from now."""
        if not self._outstanding.get(tenant_id):
            self._idle_since[tenant_id] = self._clock()
        self.maybe_sweep()

    def started(self, tenant_id: str) -> None:
        """One of the tenant's requests was accepted (queued or in flight)."""
        self._outstanding[tenant_id] = self._outstanding.get(tenant_id, 0) + 1
        self._idle_since.pop(tenant_id, None)
        self.maybe_sweep()

    def ended(self, tenant_id: str) -> None:
        """One of its requests completed, failed or was cancelled."""
        left = self._outstanding.get(tenant_id, 0) - 1
        if left > 0:
            self._outstanding[tenant_id] = left
            return
        self._outstanding.pop(tenant_id, None)
        self._idle_since[tenant_id] = self._clock()

    def restart(self) -> None:
        """A new runtime (empty queue): every tenant's count starts again at 0.

        Requests of the old runtime end with it; counting on would keep
        their tenants busy for good. They are idle from now.
        """
        now = self._clock()
        for tenant in self._outstanding:
            self._idle_since[tenant] = now
        self._outstanding.clear()

    def tracked(self) -> int:
        """Tenants with series (busy, or idle but not yet forgotten)."""
        return len(self._outstanding) + len(self._idle_since)

    def maybe_sweep(self) -> list[str]:
        """`sweep` if one is due (or the clock went back: a new clock, in tests)."""
        now, last = self._clock(), self._last_sweep
        if last is not None and last <= now < self._due:
            return []
        return self.sweep()

    def sweep(self) -> list[str]:
        """Forget every tenant idle for at least the delay; their IDs."""
        now = self._clock()
        idle = self.idle_seconds
        self._last_sweep = now
        self._due = now + _sweep_interval(idle)
        cutoff = now - idle
        gone = [tenant for tenant, since in self._idle_since.items() if since <= cutoff]
        for tenant in gone:
            del self._idle_since[tenant]
            for forget in self._forget:
                forget(tenant)
        return gone


def _sweep_interval(idle_seconds: float) -> float:
    return min(180.0, idle_seconds / 5)
