"""A bounded sample of each tenant's recent requests, as admission saw them.

The dry run replays it against an unsaved config, and the simulator (or
anything else that wants "recent traffic") reads arrival rates and service
times from it. What is kept per request is exactly what classification and
rule matching read (query text, API type, start/end relative to arrival,
step, the three matched headers, `match[]` selectors) plus what admission
decided (component, priority, rejected) and, once known, its queue wait and
service time. Nothing else is stored.

Bounds: at most `per_tenant` requests per tenant (the newest), and at most
`max_bytes` in all (an estimate: the text kept plus `ENTRY_OVERHEAD` a
request). Over the byte cap the tenants holding more than an equal share
are trimmed, oldest first, so one tenant's flood cannot empty another's
sample.

Read API (stable, for the dry run and the simulator):
- `tenants()` -> tenant ids with a sample; `requests(tenant_id)` -> the
  sampled requests, oldest first (`SampledRequest`; `absolute_start()` /
  `absolute_end()` give unix times);
- `rates(tenant_id)` -> {(component, priority): `TrafficRate`} with the
  sample's arrival rate per second, mean queue wait and mean service time
  (None until some request of that kind has completed).
All calls run on the scheduler's loop (or read a copy made there).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler_core.rules import QueryInfo

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_PER_TENANT",
    "ENTRY_OVERHEAD",
    "SampledRequest",
    "TrafficRate",
    "TrafficSample",
]

DEFAULT_PER_TENANT = 1000
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# Bytes counted for one request besides its text: the object and its fields.
ENTRY_OVERHEAD = 200


class SampledRequest:
    """One sampled request. Times are relative to `arrived` (unix seconds).

    `wait` and `service` (seconds) are filled when the request is dispatched
    and completed; `rejected` says a rejection rule refused it.
    """

    __slots__ = (
        "api_type",
        "arrived",
        "component",
        "dispatched",
        "end",
        "headers",
        "matchers",
        "priority",
        "query",
        "rejected",
        "service",
        "size",
        "start",
        "step",
        "wait",
    )

    def __init__(
        self,
        *,
        arrived: float,
        query: str,
        api_type: str,
        start: float | None,
        end: float | None,
        step: float | None,
        headers: tuple[tuple[str, str], ...],
        matchers: tuple[str, ...] | None,
        component: str,
        priority: int,
        rejected: bool,
        size: int | None = None,
    ) -> None:
        self.arrived = arrived
        self.query = query
        self.api_type = api_type
        self.start = start
        self.end = end
        self.step = step
        self.headers = headers
        self.matchers = matchers
        self.component = component
        self.priority = priority
        self.rejected = rejected
        self.wait: float | None = None
        self.service: float | None = None
        self.dispatched: float | None = None
        self.size = (
            size
            if size is not None
            else ENTRY_OVERHEAD
            + len(query)
            + sum(len(v) for _, v in headers)
            + sum(len(m) for m in matchers or ())
        )

    def absolute_start(self) -> float | None:
        return None if self.start is None else self.arrived + self.start

    def absolute_end(self) -> float | None:
        return None if self.end is None else self.arrived + self.end

    def header_map(self) -> dict[str, str]:
        return dict(self.headers)

    def to_row(self) -> tuple[Any, ...]:
        """Plain values (picklable, JSON-able) for a worker process."""
        return (
            self.arrived,
            self.query,
            self.api_type,
            self.start,
            self.end,
            self.step,
            self.headers,
            self.matchers,
            self.component,
            self.priority,
            self.rejected,
        )


@dataclass(frozen=True, slots=True)
class TrafficRate:
    """One (component, priority) of a tenant's sample."""

    count: int
    per_second: float
    mean_wait: float | None
    mean_service: float | None


@dataclass(slots=True)
class _Tenant:
    requests: deque[SampledRequest]
    size: int = 0


class TrafficSample:
    """The bounded per-tenant sample; also a runtime observer for waits."""

    def __init__(
        self,
        per_tenant: int = DEFAULT_PER_TENANT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_tenant = max(0, int(per_tenant))
        self.max_bytes = max(0, int(max_bytes))
        self._clock = clock
        self._tenants: dict[str, _Tenant] = {}
        self._bytes = 0
        self._victims: deque[str] = deque()
        # Set by `record` and taken by `on_enqueued` right after (admission
        # enqueues synchronously), so only accepted requests are tracked.
        self._last: tuple[str, SampledRequest] | None = None
        self._in_flight: dict[str, SampledRequest] = {}

    @property
    def bytes(self) -> int:
        return self._bytes

    def record(
        self,
        tenant_id: str,
        info: QueryInfo,
        arrived: float,
        component: str,
        priority: int,
        rejected: bool,
        request_id: str | None = None,
    ) -> None:
        """Keep one request as admission saw it (`arrived`: unix seconds)."""
        if not self.per_tenant:
            return
        user_agent, dashboard, panel = info.user_agent, info.dashboard_uid, info.panel_id
        matchers = info.matchers
        # The size by hand: this runs once per request.
        size = ENTRY_OVERHEAD + len(info.query) + len(user_agent) + len(dashboard) + len(panel)
        if matchers:
            size += sum(map(len, matchers))
        entry = SampledRequest(
            arrived=arrived,
            query=info.query,
            api_type=info.api_type,
            start=None if info.start is None else info.start - arrived,
            end=None if info.end is None else info.end - arrived,
            step=info.step,
            headers=_headers(info) if user_agent or dashboard or panel else (),
            matchers=matchers,
            component=component,
            priority=priority,
            rejected=rejected,
            size=size,
        )
        if entry.size > self.max_bytes:
            return
        tenant = self._tenants.get(tenant_id)
        if tenant is None:
            tenant = self._tenants[tenant_id] = _Tenant(deque())
            self._victims.append(tenant_id)
        tenant.requests.append(entry)
        tenant.size += entry.size
        self._bytes += entry.size
        if len(tenant.requests) > self.per_tenant:
            self._drop_oldest(tenant)
        if self._bytes > self.max_bytes:
            self._trim(tenant_id)
        self._last = None if rejected or request_id is None else (request_id, entry)

    def _drop_oldest(self, tenant: _Tenant) -> None:
        gone = tenant.requests.popleft()
        tenant.size -= gone.size
        self._bytes -= gone.size

    def _trim(self, recorder: str) -> None:
        """Bring the total under the cap, taking from tenants over an equal share."""
        share = self.max_bytes // max(1, len(self._tenants))
        for _ in range(len(self._victims)):
            if self._bytes <= self.max_bytes:
                return
            tenant_id = self._victims[0]
            self._victims.rotate(-1)
            tenant = self._tenants[tenant_id]
            while tenant.requests and tenant.size > share and self._bytes > self.max_bytes:
                self._drop_oldest(tenant)
            if not tenant.requests:
                self._forget(tenant_id)
        own = self._tenants.get(recorder)
        while own is not None and own.requests and self._bytes > self.max_bytes:
            self._drop_oldest(own)
        if own is not None and not own.requests:
            self._forget(recorder)

    def _forget(self, tenant_id: str) -> None:
        del self._tenants[tenant_id]
        self._victims.remove(tenant_id)

    # -- read API ------------------------------------------------------------

    def tenants(self) -> list[str]:
        return sorted(self._tenants)

    def requests(self, tenant_id: str) -> list[SampledRequest]:
        tenant = self._tenants.get(tenant_id)
        return list(tenant.requests) if tenant is not None else []

    def rows(self, tenant_id: str) -> list[tuple[Any, ...]]:
        """`requests` as plain tuples (`SampledRequest.to_row`), for a worker."""
        return [r.to_row() for r in self.requests(tenant_id)]

    def rates(self, tenant_id: str) -> dict[tuple[str, int], TrafficRate]:
        sample = self.requests(tenant_id)
        if not sample:
            return {}
        span = max(sample[-1].arrived - sample[0].arrived, 1e-9)
        groups: dict[tuple[str, int], list[SampledRequest]] = {}
        for entry in sample:
            if not entry.rejected:
                groups.setdefault((entry.component, entry.priority), []).append(entry)
        return {key: _rate(entries, span, len(sample)) for key, entries in groups.items()}

    # -- runtime observer: queue wait and service time ------------------------

    def on_enqueued(self, request: Any) -> None:
        last, self._last = self._last, None
        if last is not None and last[0] == request.id:
            self._in_flight[request.id] = last[1]

    def on_dispatched(self, request: Any, querier_id: str, worker_id: int, wait: float) -> None:
        entry = self._in_flight.get(request.id)
        if entry is not None:
            entry.wait = wait
            entry.dispatched = self._clock()

    def on_completed(self, request: Any) -> None:
        entry = self._in_flight.pop(request.id, None)
        if entry is not None and entry.dispatched is not None:
            entry.service = self._clock() - entry.dispatched

    def on_cancelled(self, request: Any) -> None:
        self._in_flight.pop(request.id, None)

    def on_failed(self, request: Any, reason: str) -> None:
        self._in_flight.pop(request.id, None)

    def on_rejected(self, request: Any, reason: str) -> None:
        self._last = None
        self._in_flight.pop(request.id, None)


def _headers(info: QueryInfo) -> tuple[tuple[str, str], ...]:
    pairs = (
        ("User-Agent", info.user_agent),
        ("X-Dashboard-Uid", info.dashboard_uid),
        ("X-Panel-Id", info.panel_id),
    )
    return tuple((name, value) for name, value in pairs if value)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _rate(entries: list[SampledRequest], span: float, total: int) -> TrafficRate:
    waits = [e.wait for e in entries if e.wait is not None]
    services = [e.service for e in entries if e.service is not None]
    # With one request there is no interval to divide by.
    per_second = len(entries) / span if total > 1 else 0.0
    return TrafficRate(len(entries), per_second, _mean(waits), _mean(services))
