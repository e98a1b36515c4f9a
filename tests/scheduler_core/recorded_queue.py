"""A real `RequestQueue` run as the live scheduler on a fake clock, recorded.

Shared by the what-if tests that hold a replay to what a live queue
measured (`test_whatif_actors`, `test_traffic_record_warmup`): arrivals
are enqueued at their instants (a refusal told to the recorder as the
runtime tells its observers), each worker takes the next request as soon
as it is free, in the runtime's order (an arrival goes to the idle workers
in the order they became idle; a worker that finishes asks again at once
with its own last tenant index), and the recorder hears every step.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable
from typing import Protocol

from scheduler_core.errors import TooManyRequests
from scheduler_core.model import Request
from scheduler_core.queue import RequestQueue
from scheduler_core.traffic_record import TrafficRecorder

__all__ = ["run_recorded"]


class _Clock(Protocol):
    """What `run_recorded` needs of a test clock: its reading, settable."""

    now: float


def run_recorded(
    queue: RequestQueue,
    recorder: TrafficRecorder,
    clock: _Clock,
    arrivals: Iterable[Request],
    workers: int,
    querier: str = "q-1",
) -> None:
    """Serve `arrivals` (each at its `enqueued_at`, for its `payload` seconds) to the end.

    `arrivals` come in time order; each request's `enqueued_at` is read as
    its arrival instant before the queue stamps it again (the same value).
    """
    slots = [(querier, queue.connect_querier(querier)) for _ in range(workers)]
    last = [-1] * workers
    idle = list(range(workers))
    busy: list[tuple[float, int, int, Request]] = []
    order = itertools.count()  # ties in completion time finish in dispatch order

    def take(w: int) -> bool:
        querier_id, worker = slots[w]
        request, last[w] = queue.dequeue(querier_id, worker, last[w])
        if request is None:
            return False
        recorder.on_dispatched(request, querier_id, worker, clock.now - request.enqueued_at)
        heapq.heappush(busy, (clock.now + request.payload, next(order), w, request))
        return True

    def finish_until(at: float) -> None:
        while busy and busy[0][0] <= at:
            clock.now, _, w, request = heapq.heappop(busy)
            queue.complete(request.id)
            recorder.on_completed(request)
            if not take(w):
                idle.append(w)

    for request in arrivals:
        finish_until(request.enqueued_at)
        clock.now = request.enqueued_at
        try:
            queue.enqueue(request)
        except TooManyRequests as refused:
            recorder.on_rejected(request, str(refused))
            continue
        recorder.on_enqueued(request)
        while idle and take(idle[0]):
            idle.pop(0)
    finish_until(float("inf"))
