"""GRPC_SERVER picks the door's server; a wrong value is refused by name."""

from __future__ import annotations

import pytest

from api.wire.grpc.implementations import implementation_from_env
from api.wire.grpc.lean_server import LeanGrpcServer
from api.wire.grpc.server import GrpcFrontDoor
from scheduler_core.model import QueueConfig
from scheduler_core.runtime import SchedulerRuntime


def test_the_lean_server_is_the_default_and_grpcio_can_be_chosen() -> None:
    assert implementation_from_env({}) == "lean"
    assert implementation_from_env({"GRPC_SERVER": " GRPCIO "}) == "grpcio"


def test_an_unknown_server_is_refused_naming_the_variable() -> None:
    with pytest.raises(ValueError, match="GRPC_SERVER: unknown value 'h2'"):
        implementation_from_env({"GRPC_SERVER": "h2"})


async def test_the_door_builds_the_server_it_was_asked_for() -> None:
    runtime = SchedulerRuntime(QueueConfig())
    lean = GrpcFrontDoor(runtime, implementation="lean")
    grpcio = GrpcFrontDoor(runtime, implementation="grpcio")

    assert isinstance(lean.server, LeanGrpcServer)
    assert not isinstance(grpcio.server, LeanGrpcServer)
    with pytest.raises(ValueError, match="unknown gRPC server"):
        GrpcFrontDoor(runtime, implementation="other")
    await grpcio.server.stop(0)
