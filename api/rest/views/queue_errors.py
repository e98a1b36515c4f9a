"""Answers about other replicas: 503 (try again), 409 (name one), 404 (no replica of that name).

Raised by `api.rest.views.queue_requests` when a lookup or cancel by id
cannot be settled by this replica alone.
"""

from __future__ import annotations

from rest_framework import status
from rest_framework.exceptions import APIException

from api.wire.queue_merged import AmbiguousRequest, UnknownReplica
from api.wire.queue_peers import UNHEARD_NOTE

__all__ = ["Ambiguous", "NoSuchReplica", "PeersMissing", "PeersUnheard"]


class PeersMissing(APIException):
    """The request is on no replica that answered, and some did not (503: try again)."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "replicas_missing"

    def __init__(self, request_id: str, missing: list[str], *, cancel: bool = False) -> None:
        # A cancel heard in time but done late is done: the peer records it.
        after = " (one that heard the cancel and did it later records that on History)"
        super().__init__(
            {
                "detail": f"request {request_id} is on no replica that answered; "
                f"{', '.join(missing)} did not answer in time{after if cancel else ''}",
                "replicas_missing": missing,
            }
        )


class PeersUnheard(APIException):
    """The request is not on this replica, which does not know its peers yet (503).

    A 404 then would say no replica holds it, though a peer this replica has
    not heard of (it just started, or Redis is unreachable) may.
    """

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "replicas_unheard"

    def __init__(self, request_id: str) -> None:
        super().__init__(
            {
                "detail": f"request {request_id} is not on this replica, and it cannot ask "
                f"the others: {UNHEARD_NOTE}; try again",
                "replicas_missing": [],
            }
        )


class Ambiguous(APIException):
    """A cancel by an id several replicas hold, without `replica` (409)."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "ambiguous_request_id"

    def __init__(self, exc: AmbiguousRequest) -> None:
        super().__init__({"detail": str(exc), "replicas": exc.replicas})


class NoSuchReplica(APIException):
    """`replica` names no replica this one knows (404): asked, it cost the peer
    timeout and a 503 saying it "did not answer"."""

    status_code = status.HTTP_404_NOT_FOUND
    default_code = "no_such_replica"

    def __init__(self, exc: UnknownReplica) -> None:
        super().__init__({"detail": str(exc), "replica": exc.replica, "replicas": exc.known})
