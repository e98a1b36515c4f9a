"""This process's traffic recorder, for the what-if simulator's `recent` workload.

One `scheduler_core.traffic_record.TrafficRecorder` hangs on the runtime's
observer fan-out from the start (as the metrics observer does: importing
this module registers it, and `config.asgi` imports it), so it has seen
every request of this replica for the last hour. It records actor paths
under the header the live config names (`actor_path_header`), read when
each request is sampled. `capture_on_loop` copies
a window of it, plus the querier fleet connected now and the classifier's
windows, on the scheduler's loop, where the recorder and the runtime live.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from api.wire import runtime_host
from scheduler_core.actor_path import DEFAULT_ACTOR_PATH_HEADER
from scheduler_core.traffic_record import Capture, TrafficRecorder

__all__ = ["LiveCapture", "capture_on_loop", "recorder"]


def _actor_path_header() -> str:
    """The header the running scheduler reads actor paths from, as admission reads it."""
    if runtime_host.started():
        return runtime_host.get_runtime().config.actor_path_header
    return DEFAULT_ACTOR_PATH_HEADER


# Its requests' text held to the dry-run sample's own cap: fixed at 64 MiB,
# it kept 64 MiB whatever TRAFFIC_SAMPLE_MAX_BYTES said.
_recorder = TrafficRecorder(
    actor_path_header=_actor_path_header, max_sample_bytes=settings.TRAFFIC_SAMPLE_MAX_BYTES
)
runtime_host.add_observer(_recorder)


@dataclass(frozen=True, slots=True)
class LiveCapture:
    """A window of recorded traffic and the fleet and windows at capture time."""

    capture: Capture
    fleet: tuple[tuple[str, int], ...]
    windows: dict[str, float]


def recorder() -> TrafficRecorder:
    return _recorder


async def capture_on_loop(window_seconds: int) -> LiveCapture | None:
    """The last `window_seconds`, or None when no scheduler runs in this process."""
    if not runtime_host.started():
        return None
    runtime = runtime_host.get_runtime()
    snapshot = runtime.queue.snapshot()
    fleet = tuple(
        (q.querier_id, len(q.workers))
        for q in snapshot.queriers
        if q.connected and not q.shutting_down and q.workers
    )
    config = runtime.config
    windows = {
        "query_ingesters_within": config.query_ingesters_within,
        "query_store_after": config.query_store_after,
    }
    return LiveCapture(_recorder.capture(window_seconds), fleet, windows)
