"""The in-process websocket benchmark: its phases answer everything, its ablation undoes itself."""

from __future__ import annotations

import pytest

from api.wire import runtime_host
from api.wire.consumers import frontend
from api.wire.consumers.frontend import FrontendConsumer
from api.wire.consumers.querier import QuerierConsumer
from tests.load.ws_consumers_bench import PARTS, _frames, _Pair, _phase, _without

pytestmark = pytest.mark.django_db(transaction=True)


async def run_phase(requests: int, offset: int) -> float:
    pair = _Pair(FrontendConsumer(), QuerierConsumer())
    await pair.open(workers=8)
    try:
        # Raises SystemExit unless every request got its ack and its result.
        return await _phase(pair, _frames(requests, offset), batch=5)
    finally:
        await pair.close()


async def test_without_every_part_the_path_still_answers_and_everything_is_put_back(
    host: runtime_host.RuntimeHost,
) -> None:
    calls = host.runtime.observer._calls  # noqa: SLF001
    before = {hook: list(methods) for hook, methods in calls.items()}
    record, classify = host.admission_log.record, frontend.classify
    sampled = host.admission_log.traffic.bytes
    with _without(host, PARTS):
        assert not any(calls.values())
        assert frontend.classify is not classify
        assert await run_phase(20, 0) > 0
        assert host.admission_log.traffic.bytes == sampled  # nothing was recorded
    assert {hook: list(methods) for hook, methods in calls.items()} == before
    assert (host.admission_log.record, frontend.classify) == (record, classify)
    assert await run_phase(20, 100) > 0
    assert host.admission_log.traffic.bytes > sampled  # recording again
