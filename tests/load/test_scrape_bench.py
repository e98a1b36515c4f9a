"""The scrape benchmark fills the queue it says, and its scrapes are whole /metrics texts."""

from __future__ import annotations

import pytest

from api.wire import runtime_host
from tests.load.scrape_bench import fill, formatting_times, scrape_stalls

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(("two_priorities", "per_tenant"), [(False, 2), (True, 4)])
async def test_the_queue_holds_every_tenant_in_both_components_and_a_scrape_lists_them(
    host: runtime_host.RuntimeHost, two_priorities: bool, per_tenant: int
) -> None:
    fill(host.runtime, 30, two_priorities)

    counts = host.runtime.queue.counts()
    assert len(host.runtime.queue) == 30 * per_tenant
    assert {row.component for row in counts.by_priority} == {"ingester", "store-gateway"}
    assert {row.priority for row in counts.by_priority} == ({0, 5} if two_priorities else {0})
    gaps, size = await scrape_stalls(2)
    assert len(gaps) == 2 and all(gap > 0 for gap in gaps)
    assert size > 30 * 100  # a queue-length series per tenant at least


async def test_both_formatters_are_timed_over_the_served_registry_once_they_agree(
    host: runtime_host.RuntimeHost,
) -> None:
    fill(host.runtime, 30, False)
    library, ours = formatting_times(1, 2)
    assert library > 0 and ours > 0
