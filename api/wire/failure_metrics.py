"""`queue_inspector_failed_requests_total{user, reason}`: requests failed back to their frontend.

Every accepted request ends once: completed, cancelled by its frontend
(`cortex_query_scheduler_cancelled_requests_total`), or failed back with a
reason (the runtime's `on_failed`). This counts the last. The runtime's
reason is text that names the querier ("querier q-7 disconnected while
running the request (after 1 retry)"), so a label of it would be a series
per querier ID; each reason is mapped to one of a fixed set instead:

- `querier_disconnected`: the querier running it went away, and it had
  already been retried once (or the scheduler was stopping).
- `querier_no_result`: its querier said it was done, but the result never
  reached the scheduler relaying it (a Cortex querier running a websocket
  frontend's request, whose result call failed).
- `shutting_down`: still queued or running when the shutdown drain ran out.
- `operator_cancelled`: an operator cancelled it from the inspector or the
  API (the frontend still waits, so it is told as a failure).
- `other`: any reason not above (none is made today: a new one shows here
  until it is given its own value).

The mapping reads the reason's type where `scheduler_core` gives one (a
`CancelReason`, a `QuerierDisconnected`, a `QuerierNoResult`), and otherwise its one constant
text, `SHUTTING_DOWN`: never the words of a reason that names a querier.
"""

from __future__ import annotations

from prometheus_client.registry import CollectorRegistry

from api.wire.loop_metrics import TallyCounter
from scheduler_core.model import CancelReason, QuerierDisconnected, QuerierNoResult
from scheduler_core.runtime import SHUTTING_DOWN

__all__ = ["REASONS", "FailureCounter", "failure_label"]

QUERIER_DISCONNECTED = "querier_disconnected"
QUERIER_NO_RESULT = "querier_no_result"
SHUTTING_DOWN_LABEL = "shutting_down"
OPERATOR_CANCELLED = "operator_cancelled"
OTHER = "other"
REASONS = (QUERIER_DISCONNECTED, QUERIER_NO_RESULT, SHUTTING_DOWN_LABEL, OPERATOR_CANCELLED, OTHER)


def failure_label(reason: str) -> str:
    """The `reason` label value of a runtime failure reason (one of `REASONS`)."""
    if isinstance(reason, CancelReason):
        return OPERATOR_CANCELLED
    if reason == SHUTTING_DOWN:
        return SHUTTING_DOWN_LABEL
    if isinstance(reason, QuerierDisconnected):
        return QUERIER_DISCONNECTED
    if isinstance(reason, QuerierNoResult):
        return QUERIER_NO_RESULT
    return OTHER


class FailureCounter(TallyCounter):
    """The counter, with `count` for the observer and `forget` for the tenant janitor."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        super().__init__(
            "queue_inspector_failed_requests_total",
            "Requests failed back to their frontend, by tenant and reason: "
            "querier_disconnected (its querier went away after its one retry), "
            "querier_no_result (its querier finished but its result never reached us), "
            "shutting_down (left when the shutdown drain ended), operator_cancelled "
            "(cancelled from the inspector or the API), other (any other reason).",
            ("user", "reason"),
            registry=registry,
        )

    def count(self, tenant_id: str, reason: str) -> None:
        self.inc(tenant_id, failure_label(reason))

    def forget(self, tenant_id: str) -> None:
        """Drop the tenant's series: one per reason at most, so no record of which."""
        for label in REASONS:
            self.remove(tenant_id, label)
