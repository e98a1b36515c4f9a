"""A plaintext gRPC door others can reach says so at start: it has no other guard."""

from __future__ import annotations

import logging

import pytest

from api.wire.grpc.server import start_grpc_server
from scheduler_core.model import QueueConfig
from scheduler_core.runtime import SchedulerRuntime


async def started_warnings(
    host: str, caplog: pytest.LogCaptureFixture, advertise: str | None = None
) -> list[str]:
    runtime = SchedulerRuntime(QueueConfig())
    await runtime.start()
    with caplog.at_level(logging.WARNING, logger="api.wire.grpc.server"):
        door = await start_grpc_server(runtime, host=host, port=0, advertise_address=advertise)
    await door.stop(0)
    await runtime.stop(drain_timeout=0)
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


async def test_a_plaintext_door_on_every_address_warns_that_anyone_reaching_it_can_use_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    (warning,) = await started_warnings("0.0.0.0", caplog, advertise="scheduler-1:9095")
    assert warning.startswith("gRPC door on 0.0.0.0 in plaintext: anyone who reaches it")
    assert "GRPC_TLS_CA_PATH" in warning


async def test_a_door_on_every_address_without_an_advertised_one_says_what_it_advertises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    advertised, _plaintext = await started_warnings("0.0.0.0", caplog)
    assert advertised.startswith("gRPC door on every interface without GRPC_ADVERTISE_ADDRESS")
    assert "advertising 127.0.0.1:" in advertised


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_a_plaintext_door_on_loopback_does_not_warn(
    host: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert await started_warnings(host, caplog) == []
