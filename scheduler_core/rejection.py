"""Cortex query rejection, and the one verdict admission gives a request.

Cortex's query-frontend (`rejectQueryOrSetPriority`) checks the tenant's
`query_rejection` attributes before its priorities: a request matching any
attribute is answered with HTTP 422 and never queued. Rejection applies, as
in Cortex, to query and query_range requests with a non-empty query (on their
data-select range) and to series, labels and label_values calls (on their
own range and `match[]` selectors); other calls are never rejected. The
attribute fields are those of priority attributes, with the same checks
(`priority.attribute_reasons`).

`judge` is what every door (websocket, Cortex gRPC), the explain view and
the dry run call, so the three can never disagree about a request.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler_core.fast_match import first_attribute, priority_match
from scheduler_core.model import TenantLimits
from scheduler_core.priority import RuleReason, attribute_reasons
from scheduler_core.rules import QueryInfo, QueryRejection

__all__ = [
    "REJECTABLE_API_TYPES",
    "REJECTED_REASON",
    "REJECTION_MESSAGE",
    "REJECTION_STATUS",
    "RejectionMatch",
    "Verdict",
    "judge",
    "match_rejection",
    "rejection_error",
]

REJECTION_STATUS = 422
# Cortex's own text (tripperware.QueryRejectErrorMessage), so users and
# runbooks recognise it; our reason adds which rule rejected the request.
REJECTION_MESSAGE = (
    "This query does not perform well and has been rejected by the service operator."
)
# The `reason` label of cortex_query_frontend_rejected_queries_total.
REJECTED_REASON = "query_rejection"
REJECTABLE_API_TYPES: frozenset[str] = frozenset(
    {"query", "query_range", "series", "labels", "label_values"}
)
_EXPRESSION_API_TYPES = frozenset({"query", "query_range"})


@dataclass(frozen=True, slots=True)
class RejectionMatch:
    """Which rejection attribute matched (None: not rejected) and why."""

    attribute_index: int | None
    reasons: tuple[RuleReason, ...]


def match_rejection(qr: QueryRejection, info: QueryInfo, now: float) -> RejectionMatch:
    """Cortex's rejection check of one request at `now` (unix seconds)."""
    if not qr.enabled:
        reason = RuleReason(None, None, "enabled", False, "query rejection is disabled")
        return RejectionMatch(None, (reason,))
    if info.api_type not in REJECTABLE_API_TYPES:
        message = f"{info.api_type} requests are never rejected (as in Cortex)"
        return RejectionMatch(None, (RuleReason(None, None, "api_type", False, message),))
    if info.api_type in _EXPRESSION_API_TYPES and not info.query:
        message = "an empty query is never rejected (as in Cortex)"
        return RejectionMatch(None, (RuleReason(None, None, "regex", False, message),))
    reasons: list[RuleReason] = []
    for index, attr in enumerate(qr.query_attributes):
        matched, why = attribute_reasons(attr, info, now, None, index)
        reasons.extend(why)
        if matched:
            return RejectionMatch(index, tuple(reasons))
    return RejectionMatch(None, tuple(reasons))


def rejection_error(tenant_id: str, attribute_index: int) -> str:
    """The error a rejected request's frontend gets: Cortex's text and the rule."""
    return (
        f"{REJECTION_MESSAGE} (tenant {tenant_id!r}: "
        f"query_rejection.query_attributes[{attribute_index}])"
    )


@dataclass(frozen=True, slots=True)
class Verdict:
    """What admission decides for one request.

    `rejected_by` is the index of the rejection attribute that matched (the
    request is then not queued and `priority` is meaningless); otherwise
    `rule_index`/`attribute_index` name the priority rule and attribute that
    gave `priority`, both None for the default priority (or 0 when
    priorities are disabled).
    """

    priority: int
    rule_index: int | None = None
    attribute_index: int | None = None
    rejected_by: int | None = None

    @property
    def rejected(self) -> bool:
        return self.rejected_by is not None


_PLAIN = Verdict(0)


def _rejectable(info: QueryInfo) -> bool:
    if info.api_type not in REJECTABLE_API_TYPES:
        return False
    return bool(info.query) or info.api_type not in _EXPRESSION_API_TYPES


def judge(limits: TenantLimits, info: QueryInfo, now: float) -> Verdict:
    """Rejection first, then priority: Cortex's `rejectQueryOrSetPriority`.

    The same decisions as `match_rejection` and `priority.match_priority`,
    through their reason-free twins (`fast_match`): this runs per request.
    """
    qr, qp = limits.query_rejection, limits.query_priority
    if not qr.enabled and not qp.enabled:
        return _PLAIN
    if qr.enabled and _rejectable(info):
        rejected = first_attribute(qr.query_attributes, info, now)
        if rejected is not None:
            return Verdict(0, rejected_by=rejected)
    if not qp.enabled:
        return _PLAIN
    return Verdict(*priority_match(qp, info, now))
