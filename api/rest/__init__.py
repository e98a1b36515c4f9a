"""The REST API under `/api/v1/` (docs/api.md): DRF views, serializers and errors.

`urls` routes, `views/` answer, `serializers` shape bodies, `content`
parses and renders size-limited JSON and YAML, `errors` maps store
exceptions to HTTP, `offload` runs a runtime-config import in a niced
worker process.

May import: `scheduler_core`, `api.store`, `api.cluster`, `api.wire`.
"""
