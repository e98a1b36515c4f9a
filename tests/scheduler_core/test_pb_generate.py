"""The committed protobuf modules match the .proto files and the wire facts."""

from __future__ import annotations

from pathlib import Path

from scheduler_core.pb import frontendv2pb_pb2, httpgrpc_pb2, schedulerpb_pb2
from scheduler_core.pb.generate import PB_DIR, generate


def test_committed_modules_equal_a_fresh_generation(tmp_path: Path) -> None:
    fresh = {path.name: path.read_text() for path in generate(tmp_path)}
    committed = {name: (PB_DIR / name).read_text() for name in fresh}

    assert fresh == committed


def test_field_numbers_are_cortex_s() -> None:
    def numbers(message: type) -> dict[str, int]:
        return {f.name: f.number for f in message.DESCRIPTOR.fields}  # type: ignore[attr-defined]

    assert numbers(schedulerpb_pb2.FrontendToScheduler) == {
        "type": 1,
        "frontendAddress": 2,
        "queryID": 3,
        "userID": 4,
        "httpRequest": 5,
        "statsEnabled": 6,
        "additionalQueueDimensions": 7,
        "protobufRequest": 8,
    }
    assert numbers(schedulerpb_pb2.SchedulerToQuerier) == {
        "queryID": 1,
        "httpRequest": 2,
        "frontendAddress": 3,
        "userID": 4,
        "statsEnabled": 5,
        "fragmentID": 6,
        "childIDtoAddrs": 7,
        "isRoot": 8,
    }
    assert numbers(httpgrpc_pb2.HTTPRequest) == {"method": 1, "url": 2, "headers": 3, "body": 4}
    assert numbers(httpgrpc_pb2.HTTPResponse) == {"Code": 1, "headers": 2, "body": 3}
    assert numbers(frontendv2pb_pb2.QueryResultRequest) == {
        "queryID": 1,
        "httpResponse": 2,
        "stats": 3,
    }


def test_service_paths_are_the_ones_cortex_dials() -> None:
    methods = {
        f"/{service.full_name}/{method.name}"
        for module in (schedulerpb_pb2, frontendv2pb_pb2)
        for service in module.DESCRIPTOR.services_by_name.values()
        for method in service.methods
    }

    assert methods == {
        "/schedulerpb.SchedulerForFrontend/FrontendLoop",
        "/schedulerpb.SchedulerForQuerier/QuerierLoop",
        "/schedulerpb.SchedulerForQuerier/NotifyQuerierShutdown",
        "/frontendv2pb.FrontendForQuerier/QueryResult",
    }


def test_enum_values_are_cortex_s() -> None:
    assert dict(schedulerpb_pb2.FrontendToSchedulerType.items()) == {
        "INIT": 0,
        "ENQUEUE": 1,
        "CANCEL": 2,
    }
    assert dict(schedulerpb_pb2.SchedulerToFrontendStatus.items()) == {
        "OK": 0,
        "TOO_MANY_REQUESTS_PER_TENANT": 1,
        "ERROR": 2,
        "SHUTTING_DOWN": 3,
    }
