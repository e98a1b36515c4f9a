"""`/metrics` series for what the live inspector views cost this replica.

The broadcaster keeps the inspector's share of the event loop under
`dashboard.live.LOOP_BUDGET` by stretching its cadence; these series let an
operator (and the benchmarks) see that share and the cadence it bought:

- `queue_inspector_live_loop_seconds_total`: event-loop seconds spent on
  ticks (snapshot, views, drill pages) and on sending their frames;
- `queue_inspector_live_viewers`: inspector views open here;
- `queue_inspector_live_interval_seconds`: seconds between ticks now.

Registered into the scheduler's registry (`api.wire.metrics.REGISTRY`) when
the dashboard app is ready; read on the loop at scrape time
(`api.wire.loop_metrics`), so nothing is counted per event.
"""

from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from api.wire.loop_metrics import Build, LoopBoundCollector
from dashboard import live

__all__ = ["LiveViewsCollector"]


class LiveViewsCollector(LoopBoundCollector):
    """The process broadcaster's counters, read when Prometheus scrapes."""

    def take(self) -> Build:
        broadcaster = live.get_broadcaster()
        spent = CounterMetricFamily(
            "queue_inspector_live_loop_seconds",
            "Event-loop seconds the live inspector views took (ticks and their frames).",
        )
        spent.add_metric([], broadcaster.loop_seconds)
        viewers = GaugeMetricFamily(
            "queue_inspector_live_viewers",
            "Live inspector views open on this replica.",
            value=len(broadcaster.viewers),
        )
        interval = GaugeMetricFamily(
            "queue_inspector_live_interval_seconds",
            "Seconds between live inspector ticks now (longer when a tick costs more).",
            value=broadcaster.interval,
        )
        families = [spent, viewers, interval]
        return lambda: families
