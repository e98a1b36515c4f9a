"""A bounded sample of each tenant's recent requests, as admission saw them.

The dry run replays it against an unsaved config. What is kept per request
is exactly what classification and rule matching read (query text, API
type, start/end relative to arrival, step, the three matched headers,
`match[]` selectors) plus what admission decided (component, priority,
rejected). Nothing else is stored. It sees requests a rejection rule
refused, which never reach the runtime; what happens to the others in the
queue (waits, service times, arrival rates) is the traffic recorder's to
keep (`scheduler_core.traffic_record`), not this sample's.

Bounds: at most `per_tenant` requests per tenant (the newest), and at most
`max_bytes` in all (an estimate: the text kept plus `ENTRY_OVERHEAD` a
request, as the recorder counts its samples, plus `TENANT_OVERHEAD` a
tenant: without it, tenants that come and go with a request or two each
held about three times the cap in real memory). Over the byte cap the
tenants holding more than an equal share are trimmed, oldest first, so one
tenant's flood cannot empty another's sample: taken in turn round a ring
(a new tenant joins it last), from where the last trim stopped, and found
in O(log tenants) without looking at the ones under the share.

Read API (stable, for the dry run): `tenants()` -> tenant ids with a
sample; `requests(tenant_id)` -> the sampled requests, oldest first
(`SampledRequest`; `absolute_start()` / `absolute_end()` give unix times);
`rows(tenant_id)` the same as plain tuples. All calls run on the
scheduler's loop (or read a copy made there). `rule_headers` is which
headers a sample keeps, here and in the recorder.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from scheduler_core.classify import client_headers
from scheduler_core.rules import QueryInfo
from scheduler_core.trim_ring import RingNode, TrimRing

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_PER_TENANT",
    "ENTRY_OVERHEAD",
    "RULE_HEADERS",
    "TENANT_OVERHEAD",
    "SampledRequest",
    "TrafficSample",
    "rule_headers",
]

DEFAULT_PER_TENANT = 1000
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# Bytes counted for one request besides its text: the object and its fields.
ENTRY_OVERHEAD = 200
# Bytes counted for a tenant's own record (its deque, the record with its
# links in the trim ring, its key and the dict's slot): about 870 measured
# with tracemalloc (20,000 tenants of one request each, less the request's
# own 208), with a 13-character tenant ID.
TENANT_OVERHEAD = 880
# The headers query priority and rejection rules read, as a sample names them.
RULE_HEADERS = ("User-Agent", "X-Dashboard-Uid", "X-Panel-Id")


def rule_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The non-empty headers the rules read, under `RULE_HEADERS` names.

    Read as classification reads them (`classify.client_headers`: any
    case, the first of each name), so a sample replays with the headers
    the live rules matched.
    """
    return _named(client_headers(headers))


def _named(values: tuple[str, str, str]) -> dict[str, str]:
    return {name: value for name, value in zip(RULE_HEADERS, values, strict=True) if value}


class SampledRequest:
    """One sampled request. Times are relative to `arrived` (unix seconds).

    `rejected` says a rejection rule refused it.
    """

    __slots__ = (
        "api_type",
        "arrived",
        "component",
        "end",
        "headers",
        "matchers",
        "priority",
        "query",
        "rejected",
        "size",
        "start",
        "step",
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


class _Tenant(RingNode):
    """One tenant's sample, and its place in the trim order (`TrimRing`)."""

    __slots__ = ("requests",)

    def __init__(self, tenant_id: str) -> None:
        super().__init__(tenant_id, TENANT_OVERHEAD)
        self.requests: deque[SampledRequest] = deque()


class TrafficSample:
    """The bounded per-tenant sample (see module doc)."""

    def __init__(
        self, per_tenant: int = DEFAULT_PER_TENANT, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        self.per_tenant = max(0, int(per_tenant))
        self.max_bytes = max(0, int(max_bytes))
        self._tenants: dict[str, _Tenant] = {}
        self._bytes = 0
        self._order: TrimRing[_Tenant] = TrimRing()

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
            headers=tuple(_named((user_agent, dashboard, panel)).items())
            if user_agent or dashboard or panel
            else (),
            matchers=matchers,
            component=component,
            priority=priority,
            rejected=rejected,
            size=size,
        )
        if entry.size + TENANT_OVERHEAD > self.max_bytes:
            return
        tenant = self._tenants.get(tenant_id)
        if tenant is None:
            tenant = self._tenants[tenant_id] = self._order.add(_Tenant(tenant_id))
            self._bytes += TENANT_OVERHEAD
        tenant.requests.append(entry)
        tenant.size += entry.size
        self._bytes += entry.size
        if len(tenant.requests) > self.per_tenant:
            self._drop_oldest(tenant)
        self._order.resized(tenant)
        if self._bytes > self.max_bytes:
            self._trim(tenant_id)

    def _drop_oldest(self, tenant: _Tenant) -> None:
        gone = tenant.requests.popleft()
        tenant.size -= gone.size
        self._bytes -= gone.size

    def _trim(self, recorder: str) -> None:
        """Bring the total under the cap, taking from tenants over an equal share.

        In ring order from where the last trim stopped, as a deque rotated
        past each tenant it looked at: the tenants at or under the share are
        passed over (in one step, see `scheduler_core.trim_ring`), each one over it loses
        its oldest requests down to the share.
        """
        share = self.max_bytes // max(1, len(self._tenants))
        while self._bytes > self.max_bytes:
            tenant = self._order.pass_to_over(share)
            if tenant is None:
                # Not while over the cap (n tenants hold more than
                # n * share), but the cap holds whatever: see below.
                break
            while tenant.requests and tenant.size > share and self._bytes > self.max_bytes:
                self._drop_oldest(tenant)
            self._settle(tenant)
        own = self._tenants.get(recorder)
        if own is not None and self._bytes > self.max_bytes:
            while own.requests and self._bytes > self.max_bytes:
                self._drop_oldest(own)
            self._settle(own)

    def _settle(self, tenant: _Tenant) -> None:
        """After requests were dropped: forget a tenant left with none."""
        if tenant.requests:
            self._order.resized(tenant)
            return
        del self._tenants[tenant.key]
        self._bytes -= tenant.size  # its TENANT_OVERHEAD, now empty
        self._order.remove(tenant)

    # -- read API ------------------------------------------------------------

    def tenants(self) -> list[str]:
        return sorted(self._tenants)

    def requests(self, tenant_id: str) -> list[SampledRequest]:
        tenant = self._tenants.get(tenant_id)
        return list(tenant.requests) if tenant is not None else []

    def rows(self, tenant_id: str) -> list[tuple[Any, ...]]:
        """`requests` as plain tuples (`SampledRequest.to_row`), for a worker."""
        return [r.to_row() for r in self.requests(tenant_id)]
