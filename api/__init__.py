"""The machine-facing app: everything a program talks to.

Sub-packages, each importing only those listed before it (and
`scheduler_core`); a test checks the direction:
- `store/`: the config store: models, validated versioned writes
  (`services`), reads (`selectors`), revisions, tokens and roles.
- `cluster/`: scale-out: replica summaries through Redis and their merge.
- `wire/`: the running scheduler and its doors: the runtime host, the JSON
  websocket protocol and consumers, Cortex's gRPC door (`wire/grpc/`),
  `/metrics` and `/healthz`.
- `rest/`: the REST API under `/api/v1/` (DRF views, serializers, errors,
  the runtime-config import worker).

Django's own hooks stay at the top: `apps`, `models` (a re-export),
`admin`, `urls`, `migrations/`, `management/`.
"""
