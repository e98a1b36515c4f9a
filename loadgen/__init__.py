"""The demo's traffic source and the service benchmarks: clients of the product, not part of it.

`demo_traffic` and `cortex_traffic` are `manage.py loadgen`'s websocket and
Cortex gRPC halves, `wsclients` the JSON-protocol clients they and
`loadtest` share, `replicas` what keeps loadgen's websocket clients connected
to every replica, `daphne_process` a real Daphne for tests and benchmarks.
Commands: `loadgen`, `loadgen_slowdown`, `loadtest`.

May import: `scheduler_core`, `api` (its wire clients and the store, to seed
tokens). Nothing imports this package but `config` (INSTALLED_APPS) and
tests.
"""
