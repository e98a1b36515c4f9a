"""What the settings page says of each scheduler setting beside its name.

A label, and where the setting comes from and what it does: the Cortex,
Mimir or Loki flag it mirrors, when there is one. Page text only; which
settings the form posts and how they are read is `dashboard.forms`.
"""

from __future__ import annotations

__all__ = ["SETTINGS_TEXT"]

SETTINGS_TEXT: dict[str, tuple[str, str]] = {
    "layout": (
        "Queue layout",
        "Which level of the queue tree comes first (Mimir's queue layouts); "
        "switching rebuilds the tree and keeps every queued request.",
    ),
    "component_selection": (
        "Component selection",
        "How a querier worker picks among ingester and store-gateway queues: in turn, "
        "or by Mimir's querier-worker queue priority (QWQP), which spreads workers "
        "over the components. Only the component-first layout reads it: under "
        "tenant-first each tenant's own priorities pick its component.",
    ),
    "max_outstanding_requests_per_tenant": (
        "Max outstanding requests per tenant",
        "Queued requests a tenant may have before more are refused with 429 "
        "(-query-scheduler.max-outstanding-requests-per-tenant); a tenant's own limit "
        "overrides it.",
    ),
    "querier_forget_delay": (
        "Querier forget delay",
        "How long a querier that went away keeps its place in tenants' shards, so a "
        "restart does not reshuffle them (-query-scheduler.querier-forget-delay; 0s: "
        "at once).",
    ),
    "priority_aging": (
        "Priority aging",
        "Not in Cortex: each priority level is worth this much waiting, so low "
        "priorities cannot starve (0s: off, strict priority order).",
    ),
    "query_ingesters_within": (
        "Query ingesters within",
        "Data newer than this is read from ingesters (-querier.query-ingesters-within); "
        "it decides a request's component.",
    ),
    "query_store_after": (
        "Query store after",
        "Data older than this is read from store-gateways (-querier.query-store-after); "
        "it decides a request's component.",
    ),
    "max_queue_hierarchy_levels": (
        "Max queue hierarchy levels",
        "Levels of a request's actor path that get sub-queues of their own "
        "(Loki's max_queue_hierarchy_levels; 0: actor paths are ignored).",
    ),
    "actor_path_header": (
        "Actor path header",
        "The request header that carries the actor path, levels separated by | "
        "(Loki's header by default).",
    ),
    "stuck_threshold": (
        "Stuck threshold",
        "The inspector marks a queue stuck when its oldest request waited longer than "
        "this; the scheduler itself ignores it.",
    ),
    "max_federated_tenants": (
        "Max federated tenants",
        "How many tenants one federated org ID (a|b|...) may name; more is refused at "
        "enqueue (Mimir's -tenant-federation.max-tenants; 0: no limit, as in Cortex).",
    ),
}
