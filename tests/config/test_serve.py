"""`python -m config.serve`: Daphne on the event loop EVENT_LOOP names."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import grpc
import pytest

from api.wire.grpc.clients import CortexFrontend, QuerierWorker, get_request
from config.serve import install_event_loop
from loadgen.daphne_process import DaphneProcess
from scheduler_core.pb import schedulerpb_pb2 as pb


def test_an_unknown_event_loop_stops_start_up_naming_the_variable() -> None:
    with pytest.raises(SystemExit, match="EVENT_LOOP: unknown value 'tokio'"):
        install_event_loop({"EVENT_LOOP": "tokio"})


def test_no_event_loop_setting_keeps_asyncios_default() -> None:
    assert install_event_loop({}) == "asyncio"


@pytest.fixture(scope="module")
def uvloop_daphne() -> Iterator[DaphneProcess]:
    server = DaphneProcess(extra_env={"EVENT_LOOP": "uvloop"})
    try:
        server.start()
        yield server
    finally:
        server.cleanup()


async def test_daphne_on_uvloop_serves_http_and_the_grpc_door(
    uvloop_daphne: DaphneProcess,
) -> None:
    address = f"127.0.0.1:{uvloop_daphne.grpc_port}"
    frontend = await CortexFrontend(address).start()
    channel = None
    try:
        for _ in range(100):  # the door opens with the runtime, just after /healthz
            try:
                loop = await frontend.open_loop()
                break
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.2)
        else:
            raise AssertionError("the gRPC door never answered")
        assert (
            await loop.enqueue(1, "tenant-uv", get_request("/api/v1/query", [("query", "up")]))
            == pb.OK
        )
        channel = grpc.aio.insecure_channel(address)
        worker = await QuerierWorker(channel, "q-uv").open()
        message = await worker.next(timeout=20)
        await worker.answer(message, body=b'{"status":"success"}')
        result = await frontend.result(1, timeout=20)
    finally:
        await frontend.close()
        if channel is not None:
            await channel.close()
    assert result.code == 200
    assert "uvloop loop" in uvloop_daphne.log()
