"""TLS and mutual TLS on the gRPC door and on the scheduler's calls to frontends.

Certificates come from a throwaway CA made per test (tests/api/wire/grpc/certs.py);
the server certificate names 127.0.0.1, so clients verify it by address.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from api.wire.grpc.admission import Admission
from api.wire.grpc.clients import CortexFrontend, QuerierWorker, get_request
from api.wire.grpc.server import GrpcFrontDoor, start_grpc_server
from api.wire.grpc.tls import VERIFY_IF_GIVEN, ClientTls, PeerTls, ServerTls, dial
from api.wire.observers import install_observer
from loadgen.cortex_traffic import GrpcDemo, GrpcUnavailable
from loadgen.daphne_process import DaphneProcess
from loadgen.demo_traffic import make_request
from scheduler_core.model import QueueConfig
from scheduler_core.pb import schedulerpb_pb2 as pb
from scheduler_core.pb.schedulerpb_pb2_grpc import SchedulerForQuerierStub
from scheduler_core.runtime import SchedulerRuntime
from tests.api.wire.grpc.certs import Issued, Pki, make_pki
from tests.api.wire.grpc.conftest import NOW, Recorder

RANGE = "/prometheus/api/v1/query_range"
REQUEST = get_request(RANGE, [("query", "up"), ("start", str(NOW - 600)), ("end", str(NOW))])


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path)


def trusting(pki: Pki, identity: Issued | None = None) -> ClientTls:
    """A client that trusts the test CA and shows `identity` if given."""
    if identity is None:
        return ClientTls(ca=pki.ca.cert)
    return ClientTls(ca=pki.ca.cert, certificate_chain=identity.cert, private_key=identity.key)


def serving(pki: Pki, *, client_ca: bool = False, client_auth: str = "") -> ServerTls:
    kwargs = {"client_auth": client_auth} if client_auth else {}
    return ServerTls(
        certificate_chain=pki.server.cert,
        private_key=pki.server.key,
        client_ca=pki.ca.cert if client_ca else None,
        **kwargs,
    )


class TlsScheduler:
    """A runtime and its door, with the channels tests open to it."""

    def __init__(self, door: GrpcFrontDoor, runtime: SchedulerRuntime, recorder: Recorder) -> None:
        self.door, self.runtime, self.recorder = door, runtime, recorder
        self.address = f"127.0.0.1:{door.port}"
        self.channels: list[grpc.aio.Channel] = []

    def channel(self, tls: ClientTls | None) -> grpc.aio.Channel:
        channel = dial(self.address, tls)
        self.channels.append(channel)
        return channel

    async def refusal(self, tls: ClientTls | None) -> grpc.StatusCode | None:
        """The status a unary call gets; None when the door served it."""
        stub = SchedulerForQuerierStub(self.channel(tls))
        try:
            await stub.NotifyQuerierShutdown(
                pb.NotifyQuerierShutdownRequest(querierID="probe"), timeout=5
            )
        except grpc.aio.AioRpcError as exc:
            return exc.code()
        return None

    async def close(self) -> None:
        for channel in self.channels:
            await channel.close()
        await self.door.stop(0)
        await self.runtime.stop(drain_timeout=0)


Starter = Callable[..., Awaitable[TlsScheduler]]


@pytest.fixture
async def start() -> AsyncIterator[Starter]:
    """`await start(server_tls=..., client_tls=...)` → a TlsScheduler, closed after the test."""
    started: list[TlsScheduler] = []

    async def starter(
        *, server_tls: ServerTls | None, client_tls: ClientTls | None = None
    ) -> TlsScheduler:
        runtime = SchedulerRuntime(QueueConfig(), forget_check_interval=3600.0)
        recorder = Recorder()
        install_observer(runtime, recorder)
        await runtime.start()
        door = await start_grpc_server(
            runtime,
            port=0,
            admission=Admission(runtime, wall_clock=lambda: NOW),
            server_tls=server_tls,
            client_tls=client_tls,
        )
        started.append(TlsScheduler(door, runtime, recorder))
        return started[-1]

    yield starter
    for scheduler in started:
        await scheduler.close()


async def round_trip(scheduler: TlsScheduler, tls: ClientTls, query_id: int) -> int:
    """One request from a Cortex frontend through a querier worker; the result code."""
    frontend = await CortexFrontend(scheduler.address, client_tls=tls).start()
    try:
        loop = await frontend.open_loop()
        worker = await QuerierWorker(scheduler.channel(tls), f"querier-{query_id}").open()
        assert await loop.enqueue(query_id, "tenant-tls", REQUEST) == pb.OK
        msg = await worker.next()
        await worker.answer(msg, body=b"over tls")
        result = await frontend.result(query_id)
        # The worker's "done" must land before its stream is cancelled.
        await scheduler.recorder.wait_for("completed")
        await worker.close()
        return result.code
    finally:
        await frontend.close()


async def test_a_tls_door_serves_frontend_and_querier_loops_to_clients_trusting_its_ca(
    start: Starter, pki: Pki
) -> None:
    scheduler = await start(server_tls=serving(pki))

    assert await round_trip(scheduler, trusting(pki), 1) == 200
    assert [r.id.rsplit(":", 1)[-1] for r in scheduler.recorder.of("completed")] == ["1"]


async def test_a_tls_door_refuses_plaintext_and_clients_that_do_not_trust_its_ca(
    start: Starter, pki: Pki
) -> None:
    scheduler = await start(server_tls=serving(pki))
    foreign_ca = ClientTls(ca=pki.stranger.cert)

    assert await scheduler.refusal(None) == grpc.StatusCode.UNAVAILABLE
    assert await scheduler.refusal(foreign_ca) == grpc.StatusCode.UNAVAILABLE
    assert await scheduler.refusal(trusting(pki)) is None


async def test_mutual_tls_refuses_clients_without_a_certificate_of_the_ca_and_serves_the_rest(
    start: Starter, pki: Pki
) -> None:
    scheduler = await start(server_tls=serving(pki, client_ca=True))

    assert await scheduler.refusal(trusting(pki)) == grpc.StatusCode.UNAVAILABLE
    assert await scheduler.refusal(trusting(pki, pki.stranger)) == grpc.StatusCode.UNAVAILABLE
    assert await scheduler.refusal(None) == grpc.StatusCode.UNAVAILABLE
    assert await round_trip(scheduler, trusting(pki, pki.client), 2) == 200


async def test_verify_if_given_serves_clients_with_and_without_a_certificate(
    start: Starter, pki: Pki
) -> None:
    scheduler = await start(server_tls=serving(pki, client_ca=True, client_auth=VERIFY_IF_GIVEN))

    assert await scheduler.refusal(trusting(pki)) is None
    assert await scheduler.refusal(trusting(pki, pki.client)) is None
    assert await scheduler.refusal(None) == grpc.StatusCode.UNAVAILABLE
    if scheduler.door.implementation == "grpcio":
        # grpcio cannot ask for a certificate without requiring it, so it does
        # not ask: a stranger's certificate is not even looked at (documented).
        assert await scheduler.refusal(trusting(pki, pki.stranger)) is None
    else:
        # The lean door asks, as Go's VerifyClientCertIfGiven: a certificate
        # that is shown must verify.
        assert await scheduler.refusal(trusting(pki, pki.stranger)) == grpc.StatusCode.UNAVAILABLE


async def break_twice(scheduler: TlsScheduler, tls: ClientTls, frontend: CortexFrontend) -> None:
    """Enqueue query 7 and lose it on two querier streams: the scheduler gives up."""
    loop = await frontend.open_loop()
    assert await loop.enqueue(7, "tenant-x", REQUEST) == pb.OK
    for attempt in (1, 2):
        worker = await QuerierWorker(scheduler.channel(tls), f"q{attempt}").open()
        assert (await worker.next()).queryID == 7
        worker.break_stream()
    await scheduler.recorder.wait_for("failed")
    await scheduler.door.reporter.wait_idle()


async def test_the_scheduler_reports_a_failure_to_a_mutual_tls_frontend_with_its_client_cert(
    start: Starter, pki: Pki
) -> None:
    client = trusting(pki, pki.client)
    scheduler = await start(server_tls=serving(pki, client_ca=True), client_tls=client)
    frontend = await CortexFrontend(
        scheduler.address, client_tls=client, server_tls=serving(pki, client_ca=True)
    ).start()
    try:
        await break_twice(scheduler, client, frontend)
        result = await frontend.result(7)
    finally:
        await frontend.close()

    assert (result.code, result.org_id) == (500, "tenant-x")
    assert (scheduler.door.reporter.sent, scheduler.door.reporter.errors) == (1, 0)


async def test_a_scheduler_without_client_tls_cannot_report_to_a_tls_frontend(
    start: Starter, pki: Pki
) -> None:
    client = trusting(pki, pki.client)
    scheduler = await start(server_tls=serving(pki), client_tls=None)
    frontend = await CortexFrontend(
        scheduler.address, client_tls=client, server_tls=serving(pki)
    ).start()
    try:
        await break_twice(scheduler, client, frontend)
    finally:
        await frontend.close()

    assert frontend.results == {}
    assert (scheduler.door.reporter.sent, scheduler.door.reporter.errors) == (0, 1)


async def test_loadgen_explains_a_tls_door_it_has_no_client_settings_for(
    settings: Any, pki: Pki
) -> None:
    settings.GRPC_SERVER_TLS = serving(pki)
    settings.GRPC_CLIENT_TLS = None

    with pytest.raises(GrpcUnavailable, match="GRPC_CLIENT_TLS_ENABLED"):
        await GrpcDemo(["127.0.0.1:1"], lambda _: 0.0).start(timeout=1)


# -- through a real Daphne process, configured only by environment variables --


@pytest.fixture(scope="module")
def tls_daphne(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaphneProcess, Pki]]:
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    env = {
        "GRPC_TLS_CERT_PATH": str(pki.server.cert_path),
        "GRPC_TLS_KEY_PATH": str(pki.server.key_path),
        "GRPC_TLS_CA_PATH": str(pki.ca.cert_path),
        "GRPC_CLIENT_TLS_ENABLED": "true",
        "GRPC_CLIENT_TLS_CA_PATH": str(pki.ca.cert_path),
        "GRPC_CLIENT_TLS_CERT_PATH": str(pki.client.cert_path),
        "GRPC_CLIENT_TLS_KEY_PATH": str(pki.client.key_path),
    }
    server = DaphneProcess(extra_env=env)
    try:
        server.start()
        yield server, pki
    finally:
        server.cleanup()


async def ready(address: str, tls: ClientTls) -> None:
    async with dial(address, tls) as channel:
        await asyncio.wait_for(channel.channel_ready(), 20)


async def test_a_daphne_process_takes_mutual_tls_for_its_door_and_its_reports_from_env(
    tls_daphne: tuple[DaphneProcess, Pki],
) -> None:
    server, pki = tls_daphne
    address = f"127.0.0.1:{server.grpc_port}"
    client = trusting(pki, pki.client)
    await ready(address, client)
    frontend = await CortexFrontend(
        address, client_tls=client, server_tls=serving(pki, client_ca=True)
    ).start()
    channels = [dial(address, tls) for tls in (None, trusting(pki), client)]
    try:
        refused = []
        for channel in channels[:2]:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await SchedulerForQuerierStub(channel).NotifyQuerierShutdown(
                    pb.NotifyQuerierShutdownRequest(querierID="probe"), timeout=5
                )
            refused.append(caught.value.code())
        loop = await frontend.open_loop()
        assert await loop.enqueue(7, "tenant-daphne-tls", REQUEST) == pb.OK
        for attempt in (1, 2):
            worker = await QuerierWorker(channels[2], f"daphne-q{attempt}").open()
            assert (await worker.next(timeout=20)).queryID == 7
            worker.break_stream()
        result = await frontend.result(7, timeout=20)
    finally:
        await frontend.close()
        for channel in channels:
            await channel.close()

    assert refused == [grpc.StatusCode.UNAVAILABLE] * 2
    assert (result.code, result.org_id) == (500, "tenant-daphne-tls")


async def test_loadgen_runs_its_cortex_clients_against_a_mutual_tls_daphne_from_settings(
    tls_daphne: tuple[DaphneProcess, Pki], settings: Any
) -> None:
    server, pki = tls_daphne
    address = f"127.0.0.1:{server.grpc_port}"
    await ready(address, trusting(pki, pki.client))
    # What `manage.py loadgen` reads when run with the server's environment.
    settings.GRPC_SERVER_TLS = serving(pki, client_ca=True)
    settings.GRPC_CLIENT_TLS = trusting(pki, pki.client)
    demo = await GrpcDemo([address], lambda _: 0.01, querier_id="tls-querier").start()
    assert demo.tls == PeerTls(dial=settings.GRPC_CLIENT_TLS, serve=settings.GRPC_SERVER_TLS)
    try:
        for n in range(20):
            assert demo.submit(make_request(random.Random(n), n))
        deadline = time.monotonic() + 20
        while demo.counts["results"] < 20 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    finally:
        await demo.close()

    assert demo.counts["results"] == 20, demo.status()
    assert demo.counts["errors"] == 0, demo.status()


async def test_under_mutual_tls_a_frontend_is_listed_by_its_certificates_common_name(
    start: Starter, pki: Pki
) -> None:
    scheduler = await start(server_tls=serving(pki, client_ca=True))
    frontend = await CortexFrontend(scheduler.address, client_tls=trusting(pki, pki.client)).start()
    try:
        await frontend.open_loop()
        (row,) = scheduler.door.frontend_connections()
        assert (row.address, row.streams, row.identity) == (frontend.address, 1, "querier")
        assert row.connected_for is not None and row.connected_for >= 0
    finally:
        await frontend.close()


async def test_without_mutual_tls_a_frontend_has_no_identity(start: Starter, pki: Pki) -> None:
    scheduler = await start(server_tls=serving(pki))
    frontend = await CortexFrontend(scheduler.address, client_tls=trusting(pki)).start()
    try:
        await frontend.open_loop()
        assert [row.identity for row in scheduler.door.frontend_connections()] == [""]
    finally:
        await frontend.close()
