"""Generated protobuf and gRPC modules for Cortex's scheduler protocol.

Do not edit the `*_pb2*` files: change `protos/*.proto` and run
`python -m scheduler_core.pb.generate` (or `make protos`).
"""

__all__: list[str] = []
