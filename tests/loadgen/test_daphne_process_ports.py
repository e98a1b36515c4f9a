"""The ports a test server is given are distinct, even when asked for together."""

from __future__ import annotations

from loadgen.daphne_process import DaphneProcess, free_ports


def test_ports_asked_for_together_are_distinct() -> None:
    for _ in range(200):
        ports = free_ports(4)
        assert len(set(ports)) == 4


def test_a_server_s_http_and_grpc_ports_are_never_the_same() -> None:
    for _ in range(50):
        server = DaphneProcess(grpc=True)
        try:
            assert server.port != server.grpc_port
        finally:
            server.cleanup()
