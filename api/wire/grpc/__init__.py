"""Cortex's `schedulerpb` gRPC protocol in front of the shared SchedulerRuntime.

Real Cortex/Mimir query-frontends and queriers point their
`-frontend.scheduler-address` / `-querier.scheduler-address` here. Nothing in
this package imports Django, so it is tested against a bare runtime.
"""

__all__: list[str] = []
