"""`queue/requests/`, `queue/requests/<id>/`, `.../cancel/`, `queue/cancel/`: the queue's contents.

Views run in a worker thread; the listing runs on the scheduler's loop
(`async_to_sync`, as `runtime_state` does) through `api.wire.queue_requests`,
which reads the queue in place and yields the loop between steps of a
long scan. Filters are validated by `RequestFilter.parse` (400 naming the
field). Every cancel (one request or by filter, not a dry run) is recorded
by `api.store.services.operator_cancel_record` after the scheduler carried
it out, and the frontend of each cancelled request gets a failure naming
the operator. Without a runtime in this process (a plain test client,
`manage.py`) lists are empty with `"running": false` and lookups are 404.

A dry run answers `as_of`, the instant it counted at (unix seconds); a
cancel given it as `enqueued_before` takes none of the requests enqueued
after it, so an operator never cancels more than the count confirmed.
Across replicas, see `queue_peers.on_this_clock`.
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

from asgiref.sync import async_to_sync
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api.cluster.replica_board import get_board
from api.rest.query_params import int_param, int_parameter
from api.rest.serializers_queue import (
    FILTER_PARAMETERS,
    CancelByFilterSerializer,
    CancelCountsSerializer,
    CancelOneSerializer,
    QueueRequestDetailSerializer,
    QueueRequestPageSerializer,
)
from api.rest.views.base import ApiView, errors
from api.rest.views.queue_errors import Ambiguous, NoSuchReplica, PeersMissing, PeersUnheard
from api.store import services
from api.store.exceptions import NotFound
from api.store.models import ConfigRevision
from api.wire import queue_requests, queue_rows, runtime_host
from api.wire.late_cancels import audit_args
from api.wire.queue_merged import AmbiguousRequest, UnknownReplica, merged
from api.wire.queue_peers import UNHEARD_NOTE, down_peers, live_peers, peers_unheard
from api.wire.queue_rows import FilterError, RequestFilter, serving_now
from scheduler_core.bounds import quoted

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "QueueCancelView",
    "QueueRequestCancelView",
    "QueueRequestDetailView",
    "QueueRequestListView",
]

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
# A cancel by filter takes every field a listing does, so what the listing
# (or the inspector's drill-down) shows is exactly what a cancel can name.
_FILTER_KEYS = tuple(f.name for f in fields(RequestFilter))


def _invalid(field: str, message: str) -> serializers.ValidationError:
    return serializers.ValidationError({field: [message]})


def _filter_problems(raw: Any) -> dict[str, list[str]]:
    """Every filter field's problem, each at its field.

    `RequestFilter.parse` stops at the first; its checks are each of one
    field, so parsing the fields one by one finds them all, and a client
    is told of every problem at once (docs/api.md "Errors"), not one per try.
    """
    problems: dict[str, list[str]] = {}
    for name in _FILTER_KEYS:
        if raw.get(name) is None:
            continue
        try:
            RequestFilter.parse({name: raw.get(name)})
        except FilterError as exc:
            problems.setdefault(exc.field, []).append(exc.message)
    return problems


def _filter(raw: Any, problems: dict[str, list[str]]) -> RequestFilter:
    """The filter, once no field of the request (`problems`, filled by the caller) failed."""
    problems = {**problems, **_filter_problems(raw)}
    if problems:
        raise serializers.ValidationError(problems)
    try:
        return RequestFilter.parse(raw)
    except FilterError as exc:
        raise _invalid(exc.field, exc.message) from None


def _limit(request: Request) -> int:
    return int_param(request, "limit", default=DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT)


def _who(request: Request) -> str:
    user = request.user
    return user.get_username() if getattr(user, "is_authenticated", False) else ""


def _source(request: Request) -> str:
    # A session (the browser) is the UI; a bearer token is automation.
    return ConfigRevision.Source.UI if request.auth is None else ConfigRevision.Source.API


def _note_problem(data: Any) -> str | None:
    note = data.get("note") if isinstance(data, dict) else None
    if note is not None and not isinstance(note, str):
        return f"must be a string, got {type(note).__name__}"
    if note is not None and len(note) > 500:
        return "at most 500 characters"
    return None


def _note(data: Any) -> str:
    """The note, once `_note_problem` found none ("" when not given)."""
    return (data.get("note") if isinstance(data, dict) else None) or ""


def _unknown_fields(body: dict[str, Any], known: set[str]) -> dict[str, list[str]]:
    return {name: ["unknown field"] for name in sorted(set(body) - known)}


def _replica() -> str:
    return get_board().own_id


def _alone_on(replica: str | None) -> bool:
    """Without peers, whether `replica` (given) names this replica.

    Another name is a replica this one does not know: a 404 naming it; or,
    before this replica has heard of its peers, perhaps one of them (False:
    the lookup finds nothing, a 503 saying the peers are unknown).
    """
    if replica in (None, _replica()):
        return True
    if peers_unheard():
        return False
    raise UnknownReplica(replica, [_replica()])


def _peers(host: Any) -> Any:
    """The host's peer link when other replicas are live or down, else None (single replica)."""
    peers = getattr(host, "queue_peers", None)
    return peers if peers is not None and (live_peers() or down_peers()) else None


def _unheard(unheard: bool) -> dict[str, Any]:
    """A listing's replica fields before this replica has heard of its peers.

    Empty for a lone replica; a scale-out one that knows no peer yet says
    so, or its listing passed for a lone one's. `unheard` is
    `peers_unheard()` read before the listing's rows: read after, the
    first registry read could land while the rows were gathered and the
    listing carried neither the peers' rows nor the note.
    """
    if not unheard:
        return {}
    return {"replicas": [_replica()], "replicas_missing": [], "replicas_note": UNHEARD_NOTE}


async def _page_on_loop(flt: RequestFilter, cursor: str | None, limit: int) -> dict[str, Any]:
    unheard = peers_unheard()
    if not runtime_host.started():
        return {"running": False, "results": [], "next": None, "total": 0, **_unheard(unheard)}
    host = runtime_host.get_host()
    # This replica's view serves for all: queriers connect to every replica,
    # so the shards and reservations agree.
    serving = {"serving": serving_now(host.runtime.queue, flt.tenant)} if flt.tenant else {}
    peers = _peers(host)
    if peers is not None:
        return {**await merged.page(peers, flt, cursor, limit), **serving}
    page = await queue_requests.list_page(
        host.runtime,
        flt,
        cursor=cursor,
        limit=limit,
        replica=_replica(),
        names=queue_requests.grpc_names(host),
    )
    body = {"running": True, "results": page.rows, "next": page.next, "total": page.total}
    return {**body, **serving, **_unheard(unheard), "_loop_seconds": page.loop_seconds}


async def _find_on_loop(
    request_id: str, replica: str | None
) -> tuple[dict[str, Any] | None, list[str]]:
    if not runtime_host.started():
        return None, []
    host = runtime_host.get_host()
    peers = _peers(host)
    if peers is not None:
        return await merged.find(peers, request_id, replica)
    if not _alone_on(replica):
        return None, []
    names = queue_requests.grpc_names(host)
    row = queue_requests.find_row(host.runtime, request_id, replica=_replica(), names=names)
    return row, []


async def _cancel_one_on_loop(
    request_id: str, reason: str, replica: str | None, audit: dict[str, Any]
) -> tuple[dict[str, Any] | None, list[str]]:
    if not runtime_host.started():
        return None, []
    host = runtime_host.get_host()
    peers = _peers(host)
    if peers is not None:
        return await merged.cancel_one(peers, request_id, reason, replica, audit)
    if not _alone_on(replica):
        return None, []
    names = queue_requests.grpc_names(host)
    row = queue_requests.cancel_one(
        host.runtime,
        request_id,
        reason,
        replica=_replica(),
        names=names,
        answered=queue_requests.answered_check(host),
    )
    return row, []


def _settled(call: Any, *args: Any) -> tuple[dict[str, Any] | None, list[str]]:
    """A lookup or cancel by id run on the loop; 409 for an id several replicas
    hold (no `replica` given), 404 for a `replica` naming none."""
    try:
        return async_to_sync(call)(*args)
    except AmbiguousRequest as exc:
        raise Ambiguous(exc) from None
    except UnknownReplica as exc:
        raise NoSuchReplica(exc) from None


def _found(
    request_id: str,
    found: tuple[dict[str, Any] | None, list[str]],
    unheard: bool,
    *,
    cancel: bool = False,
) -> dict[str, Any]:
    """The row; else 503 when a replica did not answer (it may hold it), else 404.

    `unheard` is `peers_unheard()` read before the lookup: read after, the
    first registry read could land while it ran, and a request a peer
    holds was a 404 ("already gone") rather than a 503 to retry.
    """
    row, missing = found
    if row is not None:
        return row
    if missing:
        raise PeersMissing(request_id, missing, cancel=cancel)
    if unheard:
        raise PeersUnheard(request_id)
    # Quoted: an id of blanks read as a message cut short.
    raise NotFound(f"no queued or running request {quoted(request_id)}")


async def _cancel_matching_on_loop(
    flt: RequestFilter, reason: str, dry_run: bool, audit: dict[str, Any]
) -> tuple[int, int, list[str], list[str], float | None]:
    """(matched, cancelled, replicas that took part, that did not answer, a dry run's as_of)."""
    if not runtime_host.started():
        return 0, 0, [], [], (_instant_now() if dry_run else None)
    host = runtime_host.get_host()
    peers = _peers(host)
    names = queue_requests.grpc_names(host)
    if dry_run and peers is not None:
        matched, as_of, took_part, missing = await merged.count_as_of(peers, flt)
        return matched, 0, took_part, missing, as_of
    if dry_run:
        matched, as_of = await queue_requests.count_as_of(host.runtime, flt, names)
        return matched, 0, [_replica()], [], as_of
    if peers is not None:
        return (*await merged.cancel_matching(peers, flt, reason, False, audit), None)
    matched, cancelled = await queue_requests.cancel_matching(
        host.runtime, flt, reason, dry_run=False, names=names
    )
    return matched, cancelled, [_replica()], [], None


def _instant_now() -> float:
    # With no queue to count, the count is of nothing at this moment.
    return math.ceil(queue_rows.wall_clock() * 1e6) / 1e6


def _param(name: str, kind: Any, description: str, **extra: Any) -> OpenApiParameter:
    return OpenApiParameter(name, kind, description=description, **extra)


_LIST_PARAMETERS = [
    *FILTER_PARAMETERS,
    _param("cursor", OpenApiTypes.STR, "the `next` of the previous page"),
    int_parameter("limit", default=DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT, description="rows"),
]


class QueueRequestListView(ApiView):
    """Queued requests in dequeue order, then running ones, longest running first."""

    @extend_schema(
        operation_id="queue_requests_list",
        summary="List queued and running requests",
        parameters=_LIST_PARAMETERS,
        responses={200: QueueRequestPageSerializer, **errors(400)},
    )
    def get(self, request: Request) -> Response:
        problems: dict[str, list[str]] = {}
        try:
            limit = _limit(request)
        except serializers.ValidationError as exc:
            problems.update(exc.detail)
        flt = _filter(request.query_params, problems)
        cursor = request.query_params.get("cursor") or None
        try:
            data = async_to_sync(_page_on_loop)(flt, cursor, limit)
        except queue_requests.CursorError as exc:
            raise _invalid("cursor", str(exc)) from None
        loop = data.pop("_loop_seconds", None)
        response = Response(data)
        if loop is not None:
            # What this page cost the scheduler's loop (its steps summed), for benchmarks.
            response["Server-Timing"] = f"loop;dur={loop * 1000:.3f}"
        return response


class QueueRequestDetailView(ApiView):
    """One queued or running request."""

    @extend_schema(
        operation_id="queue_requests_retrieve",
        summary="Get a queued or running request",
        parameters=[_param("replica", OpenApiTypes.STR, "scale-out: look on this replica only")],
        responses={200: QueueRequestDetailSerializer, **errors(400, 404, 409, 503)},
    )
    def get(self, request: Request, request_id: str) -> Response:
        replica = request.query_params.get("replica") or None
        unheard = peers_unheard()
        found = _settled(_find_on_loop, request_id, replica)
        return Response(_found(request_id, found, unheard))


class QueueRequestCancelView(ApiView):
    """Cancel one request (editor): its frontend is told, the cancel is recorded."""

    @extend_schema(
        operation_id="queue_requests_cancel",
        summary="Cancel a request",
        request=CancelOneSerializer,
        responses={200: QueueRequestDetailSerializer, **errors(400, 404, 409, 413, 415, 503)},
    )
    def post(self, request: Request, request_id: str) -> Response:
        # Checked whole, as a cancel by filter is: a body of `[]` or with a
        # misspelt field used to cancel the request as if it were empty.
        body = request.data  # no body: an empty QueryDict (a dict)
        if not isinstance(body, dict):
            raise _invalid("non_field_errors", "the body must be a JSON object")
        problems = _unknown_fields(body, {"note", "replica"})
        if (note_problem := _note_problem(body)) is not None:
            problems["note"] = [note_problem]
        replica = body.get("replica")
        if replica is not None and not isinstance(replica, str):
            problems["replica"] = [f"must be a string, got {type(replica).__name__}"]
        if problems:
            raise serializers.ValidationError(problems)
        note = _note(body)
        reason = queue_requests.operator_reason(_who(request), note)
        audit = audit_args(_who(request), _source(request), note)
        unheard = peers_unheard()
        found = _settled(_cancel_one_on_loop, request_id, reason, replica or None, audit)
        row = _found(request_id, found, unheard, cancel=True)
        services.operator_cancel_record(
            author=request.user,
            source=_source(request),
            request_id=request_id,
            matched=1,
            cancelled=1,
            note=note,
            replicas=[row["replica"]],
        )
        return Response(row)


class QueueCancelView(ApiView):
    """Cancel every queued request matching a filter (editor); `dry_run` only counts."""

    @extend_schema(
        operation_id="queue_cancel",
        summary="Cancel queued requests matching a filter",
        request=CancelByFilterSerializer,
        responses={200: CancelCountsSerializer, **errors(400, 413, 415)},
    )
    def post(self, request: Request) -> Response:
        body = request.data if isinstance(request.data, dict) else None
        if body is None:
            raise _invalid("non_field_errors", "the body must be a JSON object")
        problems = _unknown_fields(body, {*_FILTER_KEYS, "note", "dry_run"})
        if body.get("state") not in (None, "", "queued"):
            problems["state"] = ["only queued requests are cancelled by filter"]
        dry_run = body.get("dry_run", False)
        if not isinstance(dry_run, bool):
            problems["dry_run"] = ["must be true or false"]
        if (note_problem := _note_problem(body)) is not None:
            problems["note"] = [note_problem]
        flt = _filter({**{k: body.get(k) for k in _FILTER_KEYS}, "state": "queued"}, problems)
        if flt.tenant is None and not flt.search and not flt.regex:
            raise _invalid("non_field_errors", "give at least tenant, or search or regex")
        note = _note(body)
        reason = queue_requests.operator_reason(_who(request), note)
        audit = audit_args(_who(request), _source(request), note)
        unheard = peers_unheard()
        matched, cancelled, took_part, missing, as_of = async_to_sync(_cancel_matching_on_loop)(
            flt, reason, dry_run, audit
        )
        # A cancel that found nothing did nothing: no record of it on History.
        if not dry_run and matched:
            services.operator_cancel_record(
                author=request.user,
                source=_source(request),
                filter={k: v for k, v in body.items() if k in _FILTER_KEYS and v not in (None, "")},
                matched=matched,
                cancelled=cancelled,
                note=note,
                replicas=took_part,
            )
        answer: dict[str, Any] = {"matched": matched, "cancelled": cancelled}
        if as_of is not None:
            answer["as_of"] = as_of
        if len(took_part) > 1 or missing:
            answer.update(replicas=took_part, replicas_missing=missing)
        else:
            # Only this replica's requests, though peers may hold more: said so.
            answer.update(_unheard(unheard))
        return Response(answer)
