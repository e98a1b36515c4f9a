"""Machine-facing app: config store, REST API, frontend/querier endpoints, metrics."""
