"""An ENQUEUE whose forwarded message would pass the size limit is refused up front.

The message a querier gets (`SchedulerToQuerier`) carries the frontend's
address, which an ENQUEUE may leave out (only INIT must carry it), and
`isRoot`. So an ENQUEUE just under the 16 MiB limit could be accepted and
then fail on every querier stream it was written to: each stream ended
RESOURCE_EXHAUSTED, the request went back to the queue once, and the
frontend was told "querier disconnected", not why. Now it is answered
before it is queued: OK, then a QueryResult with HTTP 413 naming the
field and both sizes (a Cortex v1.15.3 frontend hands that to the user; it
would panic on an ERROR reply, see frontend_loop.py).
"""

from __future__ import annotations

import grpc

from api.wire.grpc.clients import CortexFrontend, QuerierWorker, get_request
from api.wire.grpc.server import MAX_MESSAGE_BYTES
from scheduler_core.pb import httpgrpc_pb2
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.api.wire.grpc.conftest import Scheduler, waiting_workers
from tests.api.wire.grpc.raw_http2 import until

UP = get_request("/api/v1/query", [("query", "up")])
# A querier channel that can take a message of the door's full size
# (grpcio's clients refuse more than 4 MiB by default).
LARGE = [("grpc.max_receive_message_length", 2 * MAX_MESSAGE_BYTES)]


def forwarded_size(frontend_address: str, body: bytes) -> int:
    """The size of the message a querier would get for `body` (what the door sends)."""
    return pb.SchedulerToQuerier(
        queryID=1,
        httpRequest=with_body(body),
        frontendAddress=frontend_address,
        userID="t",
        isRoot=True,
    ).ByteSize()


def with_body(body: bytes) -> httpgrpc_pb2.HTTPRequest:
    return httpgrpc_pb2.HTTPRequest(method="POST", url="/api/v1/query", body=body)


def body_forwarded_as(frontend_address: str, size: int) -> bytes:
    """A body whose forwarded message is exactly `size` bytes."""
    length = size - (forwarded_size(frontend_address, b"x" * size) - size)
    body = b"x" * length
    assert forwarded_size(frontend_address, body) == size
    return body


async def test_an_enqueue_that_would_be_forwarded_over_the_limit_is_answered_413_not_queued(
    sched: Scheduler,
) -> None:
    frontend = await CortexFrontend(sched.address).start()
    loop = await frontend.open_loop()
    channel = grpc.aio.insecure_channel(sched.address, options=LARGE)
    sched.channels.append(channel)
    # Two workers already waiting, as in a running cluster: before, each one
    # was handed the request and had its stream ended by it.
    workers = [await QuerierWorker(channel, f"q-{i}").open() for i in range(2)]
    await until(lambda: waiting_workers(sched) == 2)
    body = body_forwarded_as(frontend.address, MAX_MESSAGE_BYTES + 1)
    enqueue = pb.FrontendToScheduler(
        type=pb.ENQUEUE, queryID=1, userID="t", httpRequest=with_body(body)
    )
    # The ENQUEUE itself (no frontendAddress) is within the limit.
    assert enqueue.ByteSize() < MAX_MESSAGE_BYTES

    reply = await loop.send(enqueue)
    refused = await frontend.result(1)

    assert reply.status == pb.OK
    assert refused.code == 413
    assert refused.org_id == "t"
    text = refused.body.decode()
    assert "httpRequest" in text
    assert f"{MAX_MESSAGE_BYTES + 1} bytes" in text and str(MAX_MESSAGE_BYTES) in text
    assert sched.recorder.events == []
    assert len(sched.runtime.queue) == 0
    # The workers' streams are untouched: each takes a query as usual.
    for query_id in (2, 3):
        assert await loop.enqueue(query_id, "t", UP) == pb.OK
    taken = sorted([(await w.next()).queryID for w in workers])
    assert taken == [2, 3]
    await loop.close()
    for worker in workers:
        await worker.close()
    await frontend.close()


async def test_an_enqueue_forwarded_at_exactly_the_limit_is_queued_and_reaches_a_querier(
    sched: Scheduler,
) -> None:
    frontend = await CortexFrontend(sched.address).start()
    loop = await frontend.open_loop()
    channel = grpc.aio.insecure_channel(sched.address, options=LARGE)
    sched.channels.append(channel)
    worker = await QuerierWorker(channel, "q").open()
    body = body_forwarded_as(frontend.address, MAX_MESSAGE_BYTES)

    status = await loop.enqueue(1, "t", with_body(body))
    received = await worker.next()
    await worker.answer(received)

    assert status == pb.OK
    assert received.ByteSize() == MAX_MESSAGE_BYTES
    assert received.httpRequest.body == body
    assert (await frontend.result(1)).code == 200
    completed = await sched.recorder.wait_for("completed")
    assert [r.payload.query_id for r in completed] == [1]
    await loop.close()
    await worker.close()
    await frontend.close()


async def test_an_enqueue_carrying_its_loop_s_address_is_forwarded_no_larger_than_it_came(
    sched: Scheduler,
) -> None:
    # A Cortex frontend always sends its address in the ENQUEUE too; one of
    # the full limit then goes to the querier at exactly the same size.
    frontend = await CortexFrontend(sched.address).start()
    loop = await frontend.open_loop()
    channel = grpc.aio.insecure_channel(sched.address, options=LARGE)
    sched.channels.append(channel)
    worker = await QuerierWorker(channel, "q").open()
    body = body_forwarded_as(frontend.address, MAX_MESSAGE_BYTES)
    enqueue = pb.FrontendToScheduler(
        type=pb.ENQUEUE,
        frontendAddress=frontend.address,
        queryID=1,
        userID="t",
        httpRequest=with_body(body),
    )
    assert enqueue.ByteSize() == MAX_MESSAGE_BYTES

    reply = await loop.send(enqueue)
    received = await worker.next()

    assert reply.status == pb.OK
    assert received.ByteSize() == MAX_MESSAGE_BYTES
    assert received.frontendAddress == frontend.address
    await worker.answer(received)
    assert (await frontend.result(1)).code == 200
    await loop.close()
    await worker.close()
    await frontend.close()
