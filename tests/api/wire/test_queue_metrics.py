"""Mimir's per-tenant peak queue length, over each scraper's own window."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.test import AsyncClient

from api.store.services import api_token_issue
from api.wire import metrics, metrics_access, queue_metrics
from api.wire.queue_metrics import QueuePeaks
from scheduler_core.model import Request
from tests.fakes import FakeClock


def burst(peaks: QueuePeaks, tenant: str, size: int) -> None:
    """`size` requests queued one after another (then drained before any scrape)."""
    for length in range(1, size + 1):
        peaks.note(tenant, length)


def test_two_scrapers_interleaved_each_see_the_peak_since_their_own_previous_scrape() -> None:
    peaks = QueuePeaks(clock=FakeClock(0.0))
    assert peaks.collect({}, "prom-a") == peaks.collect({}, "prom-b") == []
    burst(peaks, "t", 5)
    assert peaks.collect({}, "prom-a") == [("t", 5)]
    burst(peaks, "t", 2)
    # prom-a's scrape in between took nothing from prom-b's window.
    assert peaks.collect({}, "prom-b") == [("t", 5)]
    assert peaks.collect({}, "prom-a") == [("t", 2)]
    # Drained: each reports 0 once, then the series goes.
    assert peaks.collect({}, "prom-b") == [("t", 0)]
    assert peaks.collect({}, "prom-a") == [("t", 0)]
    assert peaks.collect({}, "prom-b") == peaks.collect({}, "prom-a") == []


def test_a_curl_between_two_prometheus_scrapes_does_not_hide_a_burst_from_prometheus() -> None:
    peaks = QueuePeaks(clock=FakeClock(0.0))
    peaks.collect({}, "prometheus")
    burst(peaks, "t", 7)
    assert peaks.collect({"t": 1}, "curl") == [("t", 7)]
    assert peaks.collect({"t": 1}, "prometheus") == [("t", 7)]
    # The standing depth starts the next window, for each of them.
    assert peaks.collect({}, "prometheus") == [("t", 1)]
    assert peaks.collect({}, "curl") == [("t", 1)]


def test_callers_without_an_identity_share_one_anonymous_window() -> None:
    peaks = QueuePeaks(clock=FakeClock(0.0))
    peaks.collect({}, "prometheus")
    burst(peaks, "t", 3)
    assert peaks.collect({}) == [("t", 3)]
    assert peaks.collect({}) == [("t", 0)]
    assert peaks.collect({}, "prometheus") == [("t", 3)]


def test_many_scrapes_of_one_scraper_keep_the_segments_bounded_and_the_others_window_whole() -> (
    None
):
    peaks = QueuePeaks(clock=FakeClock(0.0))
    peaks.collect({}, "slow")
    for n in range(1, 101):
        peaks.note(f"t{n % 7}", n)
        assert peaks.collect({}, "fast")
        # One segment per scraper's previous scrape at most; the others merged.
        assert len(peaks._closed) <= 2
    highest = {f"t{k}": max(n for n in range(1, 101) if n % 7 == k) for k in range(7)}
    assert dict(peaks.collect({}, "slow")) == highest


def test_the_least_recently_seen_scraper_is_dropped_beyond_the_bound() -> None:
    peaks = QueuePeaks(max_scrapers=3, clock=FakeClock(0.0))
    for scraper in ("s0", "s1", "s2"):
        peaks.collect({}, scraper)
    burst(peaks, "t", 4)
    for scraper in ("s1", "s2", "s3"):
        assert peaks.collect({}, scraper) == [("t", 4)]
        assert len(peaks._closed) <= 3
    # s3 pushed s0 out, and with it what only s0 had not seen: s0 is new
    # again and gets the window since the oldest remembered scrape (s1's),
    # after the burst (the drained tenant's 0, not its 4).
    assert peaks.collect({}, "s0") == [("t", 0)]
    assert len(peaks._scrapers) == 3 and len(peaks._closed) <= 3


def test_a_scraper_silent_for_the_forget_delay_is_forgotten_with_its_window() -> None:
    clock = FakeClock(0.0)
    peaks = QueuePeaks(forget_after=900.0, clock=clock)
    for scraper in ("back-in-time", "back-too-late", "steady"):
        peaks.collect({}, scraper)
    burst(peaks, "t", 6)
    for _ in range(14):
        clock.now += 60.0
        peaks.collect({}, "steady")
    assert peaks.collect({}, "back-in-time") == [("t", 6)]
    clock.now += 120.0
    peaks.collect({}, "steady")
    # 960 s silent: forgotten, so no segment is kept for it any more.
    assert len(peaks._scrapers) == 2 and len(peaks._closed) == 1
    # The drained tenant's 0, not the burst's 6.
    assert peaks.collect({}, "back-too-late") == [("t", 0)]


def test_forgetting_a_tenant_drops_it_from_every_segment() -> None:
    peaks = QueuePeaks(clock=FakeClock(0.0))
    peaks.collect({}, "a")
    peaks.note("idle", 3)
    peaks.note("other", 1)
    assert peaks.collect({}, "b") == [("idle", 3), ("other", 1)]
    peaks.note("idle", 4)
    assert peaks.tracked() == 2
    peaks.forget("idle")
    assert peaks.tracked() == 1
    assert peaks.collect({}, "a") == [("other", 1)]
    assert peaks.collect({}, "b") == [("other", 0)]


def test_a_bound_below_one_scraper_is_refused() -> None:
    with pytest.raises(ValueError, match="max_scrapers"):
        QueuePeaks(max_scrapers=0)


# -- through the /metrics view ---------------------------------------------------------


@pytest.fixture
def fresh_peaks(host: Any, monkeypatch: pytest.MonkeyPatch) -> QueuePeaks:
    """One new `QueuePeaks` for the observer that notes and the collector that reads."""
    peaks = QueuePeaks()
    monkeypatch.setattr(queue_metrics, "PEAKS", peaks)
    monkeypatch.setattr(metrics, "PEAKS", peaks)
    return peaks


class ClientAt(AsyncClient):
    """A test client whose requests come from `address` (the ASGI scope's `client`)."""

    def __init__(self, address: str) -> None:
        super().__init__()
        self.address = address

    def _base_scope(self, **request: Any) -> dict[str, Any]:
        scope: dict[str, Any] = super()._base_scope(**request)
        scope["client"] = [self.address, 40000]
        return scope


async def peak_of(client: AsyncClient, tenant: str, **headers: str) -> str | None:
    response = await client.get("/metrics", headers=headers)
    assert response.status_code == 200
    prefix = f'cortex_query_scheduler_max_queue_length{{user="{tenant}"}} '
    for line in response.content.decode().splitlines():
        if line.startswith(prefix):
            return line.removeprefix(prefix)
    return None


def drained_burst(host: Any, tenant: str, size: int) -> None:
    for n in range(size):
        host.runtime.enqueue(Request(id=f"{tenant}-{n}", tenant_id=tenant))
    for n in range(size):
        host.runtime.cancel(f"{tenant}-{n}")


@pytest.mark.django_db(transaction=True)
async def test_two_prometheus_servers_at_different_addresses_each_see_a_burst(
    host: Any, fresh_peaks: QueuePeaks
) -> None:
    first, second = ClientAt("10.0.0.1"), ClientAt("10.0.0.2")
    assert await peak_of(first, "v-addr") is None and await peak_of(second, "v-addr") is None
    drained_burst(host, "v-addr", 3)
    assert await peak_of(first, "v-addr") == "3.0"
    assert await peak_of(second, "v-addr") == "3.0"
    assert await peak_of(first, "v-addr") == "0.0"


@pytest.mark.django_db(transaction=True)
async def test_with_login_required_two_tokens_from_one_address_are_two_scrapers(
    host: Any, fresh_peaks: QueuePeaks, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.METRICS_REQUIRE_LOGIN = True
    monkeypatch.setattr(metrics_access, "RECENT", metrics_access.RecentScrapers())
    issue = database_sync_to_async(api_token_issue)
    tokens = [(await issue(name=f"prom-{n}", role="viewer"))[1] for n in range(2)]
    one, other = ({"Authorization": f"Bearer {plaintext}"} for plaintext in tokens)
    client = AsyncClient()
    await peak_of(client, "v-token", **one)
    await peak_of(client, "v-token", **other)
    drained_burst(host, "v-token", 4)
    assert await peak_of(client, "v-token", **one) == "4.0"
    assert await peak_of(client, "v-token", **other) == "4.0"
    # The same token from another address is a third scraper, new: it gets
    # the window since the oldest remembered scrape, after the burst.
    assert await peak_of(ClientAt("10.0.0.9"), "v-token", **one) == "0.0"
    assert await peak_of(client, "v-token", **one) == "0.0"
    assert await peak_of(client, "v-token", **one) is None
