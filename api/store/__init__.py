"""The config store: the database is the source of truth for tenants and settings.

Writes live in `services` (validated by `scheduler_core.validation`,
versioned, recorded as revisions, published after commit through
`config_events`; the runtime-config import is in `services_import`, the
revision record every write shares in `services_record`), reads in
`selectors`; `import_plan`, `cortex_export` (a block as the
runtime-config export writes it for Cortex) and `diff` are pure helpers,
as are `config_yaml` (the config as YAML), `block_parse` (a pasted tenant
block read back) and `yaml_keys` (the one YAML loader's reading rules,
Cortex's Go decoder's: every YAML body is read through it; `yaml_scalars`
is how that decoder resolves a plain scalar); `tokens` and
`roles` say who may do what; `schema_state` says whether the database's
schema is behind the code's migrations; `one_version` reads a body with
the exact version its ETag names.

May import: `scheduler_core`, Django. Never `api.rest`, `api.wire` or
`api.cluster`.
"""
