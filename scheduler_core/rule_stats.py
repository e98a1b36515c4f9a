"""How often each rule of a tenant's current config matched: a few increments
per request on the admission path.

Per tenant, counts are kept for the limits currently applied (its config
version; a change of limits starts a fresh record, since rule indices then
mean other rules) in one flat list of slots: total, default priority, one per
rejection attribute, one per priority attribute (a priority rule's count is
the sum of its attributes', since a request matches exactly one attribute).
Each slot is counted since the record began and, for each window (5m, 1h),
in `STEPS_PER_WINDOW` steps of 1/60 of its span (5 s, 60 s), numbered from
the moment the record began. A window counts the steps that began at most
its span ago: so it never counts a hit older than its span, covers at least
59/60 of it, and while the record is younger than the span it counts every
hit, exactly as "since the version" does (steps of the wall clock's minutes
left out the partial first minute of a young record, so "5m" read less than
"since the version" after four minutes of counting).

Lifetime totals (what the Prometheus counters export) are the current
records plus everything folded from records that ended, so counters never
go down when a config changes. The clock is injected (monotonic seconds).

A federated ID's requests (`a|b`) are counted once, under the whole ID and
its combined limits, so counting stays a few increments per request; a
tenant it names reads them through `member_share` when its counts are
read, which costs nothing per request.
"""

from __future__ import annotations

import hashlib
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from scheduler_core.model import TenantLimits
from scheduler_core.rejection import REJECTED_REASON, Verdict

__all__ = [
    "BUCKET_SECONDS",
    "DEFAULT_LABEL",
    "WINDOWS",
    "MemberShare",
    "RuleCounts",
    "STEPS_PER_WINDOW",
    "RuleStats",
    "limits_fingerprint",
    "member_share",
    "naming",
    "slot_layout",
]

BUCKET_SECONDS = 60
# Window name -> its span in minutes (of BUCKET_SECONDS).
WINDOWS: tuple[tuple[str, int], ...] = (("5m", 5), ("1h", 60))
# Each window is kept in this many steps: its edge is as fine as 1/60 of it.
STEPS_PER_WINDOW = 60
# The finest window's step (5 s); every window's step is a whole number of
# them, so `record` divides the clock once and rolls only when it changes.
_FINE_SECONDS = min(minutes for _, minutes in WINDOWS) * BUCKET_SECONDS / STEPS_PER_WINDOW
DEFAULT_LABEL = "default"
_TOTAL, _DEFAULT = 0, 1


def limits_fingerprint(limits: TenantLimits) -> str:
    """A short id of a config that every replica computes alike (for merging)."""
    return hashlib.sha256(repr(limits).encode()).hexdigest()[:16]


def slot_layout(limits: TenantLimits) -> tuple[int, tuple[int, ...]]:
    """(first priority slot, each priority rule's first slot) for `limits`."""
    base = 2 + len(limits.query_rejection.query_attributes)
    starts: list[int] = []
    slot = base
    for pdef in limits.query_priority.priorities:
        starts.append(slot)
        slot += len(pdef.query_attributes)
    return slot, tuple(starts)


@dataclass(frozen=True, slots=True)
class RuleCounts:
    """One tenant's counts for its current limits: per window, a list by slot.

    `windows` maps "5m", "1h" and "version" to lists of `slots` ints; read
    them with `priority(i)`, `attribute(i, j)`, `rejection(k)`, `default`,
    `total`. `age` is how long (seconds) the record has counted.
    """

    fingerprint: str
    limits: TenantLimits
    age: float
    windows: dict[str, list[int]]

    def _slot(self, slot: int) -> dict[str, int]:
        return {name: counts[slot] for name, counts in self.windows.items()}

    def total(self) -> dict[str, int]:
        return self._slot(_TOTAL)

    def default(self) -> dict[str, int]:
        return self._slot(_DEFAULT)

    def rejection(self, index: int) -> dict[str, int]:
        return self._slot(2 + index)

    def attribute(self, rule: int, index: int) -> dict[str, int]:
        return self._slot(slot_layout(self.limits)[1][rule] + index)

    def priority(self, rule: int) -> dict[str, int]:
        start = slot_layout(self.limits)[1][rule]
        size = len(self.limits.query_priority.priorities[rule].query_attributes)
        return {name: sum(counts[start : start + size]) for name, counts in self.windows.items()}


def naming(tenant_id: str, org_ids: Iterable[str]) -> list[str]:
    """The federated org IDs among `org_ids` that name `tenant_id`, sorted."""
    return sorted(o for o in org_ids if "|" in o and tenant_id in o.split("|"))


@dataclass(frozen=True, slots=True)
class MemberShare:
    """How one tenant of a federated ID reads that ID's counts.

    A federated ID's requests are counted under the whole ID, in the layout
    of its combined limits (`federation.combined_limits`): every tenant's
    enabled rejection attributes in ID order, then the priority rules of the
    first tenant with priority enabled. `slots` maps a slot of that layout
    to the member's own; a slot left out is a decision another tenant's
    rules made (counted in the member's total only). `priority_from` names
    the tenant whose priority rules judged the ID (None: nobody's enabled).
    """

    priority_from: str | None
    slots: dict[int, int]

    def fold(self, windows: Mapping[str, Sequence[int]], size: int) -> dict[str, list[int]]:
        """The combined counts (by window, by slot) in the member's layout of `size` slots."""
        folded: dict[str, list[int]] = {}
        for name, counts in windows.items():
            mine = [0] * size
            for combined, own in self.slots.items():
                if combined < len(counts) and own < size:
                    mine[own] += counts[combined]
            folded[name] = mine
        return folded


def member_share(org_id: str, member: str, parts: Mapping[str, TenantLimits]) -> MemberShare:
    """`member`'s share of the normalised federated `org_id`, given each tenant's limits."""
    tenants = org_id.split("|")
    own = parts[member]
    slots = {_TOTAL: _TOTAL}
    offset = 0
    for tenant in tenants:
        rejection = parts[tenant].query_rejection
        if not rejection.enabled:
            continue
        if tenant == member:
            for k in range(len(rejection.query_attributes)):
                slots[2 + offset + k] = 2 + k
        offset += len(rejection.query_attributes)
    owner = next((t for t in tenants if parts[t].query_priority.enabled), None)
    if owner is None or owner == member:
        # Nobody's rules: the default, as for a tenant with priority disabled.
        slots[_DEFAULT] = _DEFAULT
    if owner == member:
        first_own = 2 + len(own.query_rejection.query_attributes)
        rules = own.query_priority.priorities
        for j in range(sum(len(p.query_attributes) for p in rules)):
            slots[2 + offset + j] = first_own + j
    return MemberShare(owner, slots)


class _Steps:
    """One window's counts of a record, by step since the record began."""

    __slots__ = ("current", "fine", "index", "past", "span", "width")

    def __init__(self, span: float) -> None:
        self.span = span
        self.width = span / STEPS_PER_WINDOW
        self.fine = round(self.width / _FINE_SECONDS)  # fine steps per step
        self.index: int | None = None
        self.current: list[int] = []  # the first record rolls a step in
        self.past: deque[tuple[int, list[int]]] = deque()

    def roll(self, index: int, size: int) -> None:
        self.index = index
        self.current = [0] * size
        self.past.append((index, self.current))
        # Step `index - STEPS_PER_WINDOW` began exactly one span before this
        # one did: the oldest any read from now on can still count.
        while self.past and self.past[0][0] < index - STEPS_PER_WINDOW:
            self.past.popleft()

    def summed(self, elapsed: float, size: int) -> list[int]:
        """The counts of the steps that began at most `span` before `elapsed`."""
        summed = [0] * size
        for index, counts in self.past:
            if index * self.width >= elapsed - self.span:
                for slot, count in enumerate(counts):
                    summed[slot] += count
        return summed


class _Record:
    __slots__ = ("begun", "currents", "fine", "fingerprint", "limits", "starts", "steps", "version")

    def __init__(self, limits: TenantLimits, now: float) -> None:
        size, starts = slot_layout(limits)
        self.limits = limits
        self.fingerprint = limits_fingerprint(limits)
        self.starts = starts
        self.version = [0] * size
        self.begun = now
        self.steps = [_Steps(minutes * BUCKET_SECONDS) for _, minutes in WINDOWS]
        self.fine: int | None = None  # the fine step the `currents` are of
        self.currents: tuple[list[int], ...] = ()

    def roll(self, fine: int) -> None:
        """Fine step `fine` began: each window's step that changed with it is rolled in."""
        self.fine = fine
        size = len(self.version)
        for steps in self.steps:
            index = fine // steps.fine
            if index != steps.index:
                steps.roll(index, size)
        self.currents = tuple(steps.current for steps in self.steps)

    def slot(self, verdict: Verdict) -> int:
        if verdict.rejected_by is not None:
            return 2 + verdict.rejected_by
        if verdict.rule_index is None or verdict.attribute_index is None:
            return _DEFAULT
        return self.starts[verdict.rule_index] + verdict.attribute_index


class RuleStats:
    """Rule hit counts per tenant; `record` is the only hot-path call."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._records: dict[str, _Record] = {}
        self._retired_matches: dict[tuple[str, str, str], int] = {}
        self._retired_rejected: dict[str, int] = {}

    def record(self, tenant_id: str, limits: TenantLimits, verdict: Verdict) -> None:
        """Count one admitted (or rejected) request under `limits`."""
        rec = self._records.get(tenant_id)
        if rec is None or (rec.limits is not limits and rec.limits != limits):
            rec = self._restart(tenant_id, limits)
        # `_Record.slot`, inlined: this runs once per request.
        if verdict.rejected_by is not None:
            slot = 2 + verdict.rejected_by
        elif verdict.rule_index is None or verdict.attribute_index is None:
            slot = _DEFAULT
        else:
            slot = rec.starts[verdict.rule_index] + verdict.attribute_index
        version = rec.version
        if slot >= len(version):  # a verdict judged under other limits
            slot = _DEFAULT
        version[_TOTAL] += 1
        version[slot] += 1
        fine = int((self._clock() - rec.begun) // _FINE_SECONDS)
        if fine != rec.fine:
            rec.roll(fine)
        for current in rec.currents:
            current[_TOTAL] += 1
            current[slot] += 1

    def applied(self, tenant_id: str, limits: TenantLimits) -> None:
        """The tenant's limits changed: its counts start again if they were kept
        under other limits.

        `record` alone restarts a tenant's counts only at its next request:
        with none under a change that a rollback then undid (A, B, A), the
        record under A lived on, and "since the version" mixed the counts
        and time from before the rollback with those after it.
        """
        rec = self._records.get(tenant_id)
        if rec is not None and rec.limits is not limits and rec.limits != limits:
            self._restart(tenant_id, limits)

    def _restart(self, tenant_id: str, limits: TenantLimits) -> _Record:
        old = self._records.get(tenant_id)
        if old is not None:
            self._fold(tenant_id, old)
        rec = self._records[tenant_id] = _Record(limits, self._clock())
        return rec

    def _fold(self, tenant_id: str, rec: _Record) -> None:
        for labels, count in _labelled(tenant_id, rec):
            self._retired_matches[labels] = self._retired_matches.get(labels, 0) + count
        rejected = sum(rec.version[2 : 2 + len(rec.limits.query_rejection.query_attributes)])
        if rejected:
            self._retired_rejected[tenant_id] = self._retired_rejected.get(tenant_id, 0) + rejected

    def counts(self, tenant_id: str) -> RuleCounts | None:
        """The tenant's counts for its current limits, or None if it had no request.

        A window counts the hits of the steps that began at most its span
        ago (see the module's docstring): all of them while `age` is at
        most the span, so "5m", "1h" and "version" are equal then.
        """
        rec = self._records.get(tenant_id)
        if rec is None:
            return None
        age = self._clock() - rec.begun
        size = len(rec.version)
        windows = {
            name: steps.summed(age, size)
            for (name, _), steps in zip(WINDOWS, rec.steps, strict=True)
        }
        windows["version"] = list(rec.version)
        return RuleCounts(rec.fingerprint, rec.limits, age, windows)

    def tenants(self) -> list[str]:
        return sorted(self._records)

    def forget(self, tenant_id: str) -> None:
        """Drop every count of a tenant, live and retired (its series go away)."""
        self._records.pop(tenant_id, None)
        self._retired_rejected.pop(tenant_id, None)
        for labels in [key for key in self._retired_matches if key[0] == tenant_id]:
            del self._retired_matches[labels]

    def matches_total(self) -> dict[tuple[str, str, str], int]:
        """Lifetime (user, priority, attribute) -> requests, for the counter.

        A request given the default priority counts as ("default", "").
        """
        totals = dict(self._retired_matches)
        for tenant_id, rec in self._records.items():
            for labels, count in _labelled(tenant_id, rec):
                totals[labels] = totals.get(labels, 0) + count
        return totals

    def rejected_total(self) -> dict[tuple[str, str], int]:
        """Lifetime (user, reason) -> rejected requests, for the counter."""
        totals = {(user, REJECTED_REASON): n for user, n in self._retired_rejected.items()}
        for tenant_id, rec in self._records.items():
            rejected = sum(rec.version[2 : 2 + len(rec.limits.query_rejection.query_attributes)])
            if rejected:
                key = (tenant_id, REJECTED_REASON)
                totals[key] = totals.get(key, 0) + rejected
        return totals


def _labelled(tenant_id: str, rec: _Record) -> Iterator[tuple[tuple[str, str, str], int]]:
    if rec.version[_DEFAULT]:
        yield (tenant_id, DEFAULT_LABEL, ""), rec.version[_DEFAULT]
    for rule, pdef in enumerate(rec.limits.query_priority.priorities):
        start = rec.starts[rule]
        for index in range(len(pdef.query_attributes)):
            count = rec.version[start + index]
            if count:
                yield (tenant_id, str(pdef.priority), str(index)), count
