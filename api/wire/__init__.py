"""The running scheduler and the doors frontends and queriers come through.

`runtime_host` owns the process's `SchedulerRuntime` (lazy start, config
apply through `config_apply`, reconcile and the token re-check in
`host_sync`, the SIGTERM drain through
`drain_signals`); `observers` fans its one observer slot
out; `protocol` and `consumers/` are the JSON websocket protocol
(docs/protocol.md); `grpc/` is Cortex's `schedulerpb` door
(docs/protocol-grpc.md); `frontends` lists connected frontends;
`queue_rows` is a request's row and a listing's filter (its fields read
in `queue_filter_params`), which `queue_requests`, `queue_peers` and
`queue_merged` page, find and cancel, across replicas too; `metrics`
(with `rule_metrics`, `loop_metrics` and `exposition`, its text writer)
and `health` are the endpoints monitoring polls.

May import: `scheduler_core`, `api.store`, `api.cluster`. Never `api.rest`.
"""
