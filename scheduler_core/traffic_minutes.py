"""What the recorder keeps per minute: service times and the waits the scheduler measured.

Per minute of the horizon, `MinuteLog` keeps, per component, a log-scale
histogram of service times measured from dispatch to result
(`dispatched` -> `completed`; cancelled or failed runs are not service
times: `ended` forgets them), and the queue waits the scheduler measured
at dispatch, by component and by priority, with their sums for the mean,
and the requests refused with a 429. The simulator draws service times
from the first and checks its replay against the second (`recording_of`
summarises them), and reads in the waits how far back the backlog queued
at a window's start reaches (`backlog_start`), which sizes the replay's
warm-up. Memory is one `_Minute` per minute of the horizon plus one entry
per request running now.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from dataclasses import dataclass, field

from scheduler_core.stats import WaitHistogram

__all__ = ["MinuteCopy", "MinuteLog", "WaitCopy"]

WaitCopy = tuple[Counter[int], float, float]  # histogram counts, max, sum
# (minute, service {component: (counts, max)}, waits by component, by priority, rejected)
MinuteCopy = tuple[
    int,
    dict[str, tuple[Counter[int], float]],
    dict[str, WaitCopy],
    dict[int, WaitCopy],
    int,
]


@dataclass(slots=True)
class _Waits:
    hist: WaitHistogram = field(default_factory=WaitHistogram)
    total: float = 0.0

    def add(self, seconds: float) -> None:
        self.hist.add(seconds)
        self.total += seconds

    def copy(self) -> WaitCopy:
        return self.hist.counts.copy(), self.hist.max, self.total


@dataclass(slots=True)
class _Minute:
    minute: int
    service: dict[str, WaitHistogram] = field(default_factory=dict)
    by_component: dict[str, _Waits] = field(default_factory=dict)
    by_priority: dict[int, _Waits] = field(default_factory=dict)
    rejected: int = 0


class MinuteLog:
    """The last `horizon_seconds` of service times and measured waits, minute by minute."""

    def __init__(self, horizon_seconds: int) -> None:
        self._horizon_minutes = horizon_seconds // 60
        self._minutes: deque[_Minute] = deque()
        self._dispatched_at: dict[str, float] = {}

    def rejected(self, now: float) -> None:
        self._minute(now).rejected += 1

    def dispatched(
        self, request_id: str, component: str, priority: int, wait: float, now: float
    ) -> None:
        self._dispatched_at[request_id] = now
        minute = self._minute(now)
        waits = minute.by_component.get(component)
        if waits is None:
            waits = minute.by_component[component] = _Waits()
        waits.add(wait)
        by_priority = minute.by_priority.get(priority)
        if by_priority is None:
            by_priority = minute.by_priority[priority] = _Waits()
        by_priority.add(wait)

    def completed(self, request_id: str, component: str, now: float) -> None:
        started = self._dispatched_at.pop(request_id, None)
        if started is None:
            return
        service = self._minute(now).service
        hist = service.get(component)
        if hist is None:
            hist = service[component] = WaitHistogram()
        hist.add(max(0.0, now - started))

    def ended(self, request_id: str) -> None:
        """A run that ended without a result (cancelled, failed): no service time."""
        self._dispatched_at.pop(request_id, None)

    def copy_since(self, early: float) -> list[MinuteCopy]:
        """Copies of the minutes ending after `early` (seconds of the monotonic clock)."""
        return [
            (
                m.minute,
                {c: (h.counts.copy(), h.max) for c, h in m.service.items()},
                {c: w.copy() for c, w in m.by_component.items()},
                {p: w.copy() for p, w in m.by_priority.items()},
                m.rejected,
            )
            for m in self._minutes
            if (m.minute + 1) * 60 > early
        ]

    def backlog_start(self, start: float, earliest: float) -> float:
        """When the backlog queued at `start` began, as the waits measured since tell it.

        A request dispatched in a minute after waiting `w` was queued at the
        latest by the minute's end less `w`, and the queue held it from
        then to the minute: the queue was not empty there. So the backlog
        reaches back to the earliest such instant of the minutes after it,
        which the minutes before it may push further back in turn (a class
        starved for minutes: each minute's waits reach into the one
        before). Taking the minute's end (the latest the request can have
        been dispatched) keeps waits under a minute from reaching back at
        all, so a busy queue with short waits does not walk to `earliest`
        minute by minute. No earlier than `earliest`; at most the minutes
        kept, newest first, are read (an hour's: 60).
        """
        begun = start
        for minute in reversed(self._minutes):
            end = (minute.minute + 1) * 60
            if end <= begun or begun <= earliest:
                break
            longest = max((w.hist.max for w in minute.by_component.values()), default=0.0)
            begun = min(begun, end - longest)
        return max(begun, earliest)

    def _minute(self, now: float) -> _Minute:
        index = int(math.floor(now / 60.0))
        minutes = self._minutes
        if minutes and minutes[-1].minute == index:
            return minutes[-1]
        if minutes and minutes[-1].minute > index:
            # A clock read out of order (callers replaying events): find its minute.
            for minute in reversed(minutes):
                if minute.minute == index:
                    return minute
                if minute.minute < index:
                    break
            return _Minute(index)  # older than what is kept, or a gap: not recorded
        oldest = index - self._horizon_minutes
        while minutes and minutes[0].minute < oldest:
            minutes.popleft()
        minute = _Minute(index)
        minutes.append(minute)
        return minute
