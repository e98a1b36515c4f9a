"""SIGTERM on a real Daphne ends idle Cortex streams as Cortex's scheduler ends them.

At the end of the drain the process's runtime host stops the gRPC door:
a frontend loop with nothing in flight gets SHUTTING_DOWN and status OK
(what Cortex's scheduler sends a FrontendLoop once it is stopping), and a
querier worker waiting for work gets UNKNOWN "queue is stopped" (its
queue's ErrStopped). Before, the frontend loops waited out the door's 1 s
grace and were reset (RST_STREAM CANCEL), on both gRPC servers.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator

import grpc
import pytest

from api.wire.grpc.clients import CortexFrontend, FrontendLoop, QuerierWorker, get_request
from api.wire.grpc.querier_loop import QUEUE_STOPPED
from loadgen.daphne_process import DaphneProcess
from scheduler_core.pb import schedulerpb_pb2 as pb

QUERY = get_request("/prometheus/api/v1/query", [("query", "up")])


@pytest.fixture(params=["lean", "grpcio"])
async def doomed(request: pytest.FixtureRequest) -> AsyncIterator[DaphneProcess]:
    """A server of its own on each gRPC server: the test ends it with SIGTERM."""
    server = DaphneProcess(extra_env={"SHUTDOWN_DRAIN_TIMEOUT": "1", "GRPC_SERVER": request.param})
    await asyncio.to_thread(server.start)
    try:
        yield server
    finally:
        await asyncio.to_thread(server.cleanup)


async def how_it_ended(loop: FrontendLoop) -> tuple[list[int], grpc.StatusCode]:
    """The statuses the scheduler sent after the last reply read, and the call's status."""
    statuses = []
    while (message := await asyncio.wait_for(loop.call.read(), 30)) is not grpc.aio.EOF:
        statuses.append(message.status)
    return statuses, await loop.call.code()


async def test_sigterm_ends_idle_frontend_loops_and_waiting_workers_with_cortex_s_statuses(
    doomed: DaphneProcess,
) -> None:
    address = f"127.0.0.1:{doomed.grpc_port}"
    async with grpc.aio.insecure_channel(address) as probe:
        await asyncio.wait_for(probe.channel_ready(), 20)
    frontend = await CortexFrontend(address).start()
    channel = grpc.aio.insecure_channel(address)
    try:
        loops = [await frontend.open_loop() for _ in range(2)]
        worker = await QuerierWorker(channel, "sigterm-q").open()
        # The frontend had work, answered before the signal: nothing in flight.
        assert await loops[0].enqueue(1, "sigterm-t", QUERY) == pb.OK
        await worker.answer(await worker.next(timeout=10))
        assert (await frontend.result(1, timeout=10)).code == 200

        assert doomed.proc is not None
        doomed.proc.send_signal(signal.SIGTERM)

        assert [await how_it_ended(loop) for loop in loops] == [
            ([pb.SHUTTING_DOWN], grpc.StatusCode.OK)
        ] * 2
        with pytest.raises(grpc.aio.AioRpcError) as stopped:
            await worker.next(timeout=30)
        assert (stopped.value.code(), stopped.value.details()) == (
            grpc.StatusCode.UNKNOWN,
            QUEUE_STOPPED,
        )
        assert await asyncio.to_thread(doomed.proc.wait, 30) is not None
        await worker.close()
    finally:
        await channel.close()
        await frontend.close()
