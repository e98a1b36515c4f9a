"""A multi-tenant query scheduler in the Mimir/Cortex query-scheduler model.

Pure Python with no Django import, so it can be embedded, simulated on a
virtual clock and tested in a bare interpreter.
"""

from scheduler_core.errors import (
    ConfigInvalid,
    DuplicateRequest,
    FieldError,
    QuerierShuttingDown,
    SchedulerError,
    SchedulerStopping,
    TooManyRequests,
    UnknownQuerier,
)
from scheduler_core.model import (
    COMPONENTS,
    PriorityDef,
    QueryAttribute,
    QueryInfo,
    QueryPriority,
    QueryRejection,
    QueueConfig,
    Request,
    TenantLimits,
    TimeRange,
)
from scheduler_core.queue import RequestQueue
from scheduler_core.queue_counts import QueueCounts
from scheduler_core.runtime import SchedulerRuntime
from scheduler_core.snapshot import QueueSnapshot

__all__ = [
    "COMPONENTS",
    "ConfigInvalid",
    "DuplicateRequest",
    "FieldError",
    "PriorityDef",
    "QuerierShuttingDown",
    "QueryAttribute",
    "QueryInfo",
    "QueryPriority",
    "QueryRejection",
    "QueueConfig",
    "QueueCounts",
    "QueueSnapshot",
    "Request",
    "RequestQueue",
    "SchedulerError",
    "SchedulerRuntime",
    "SchedulerStopping",
    "TenantLimits",
    "TimeRange",
    "TooManyRequests",
    "UnknownQuerier",
]
