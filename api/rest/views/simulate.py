"""`simulate/`: what if this config change were applied, on real or scenario traffic?

`POST simulate/` runs one workload under two configs, the base (the live
config for `recent`, the scenario's own for a named scenario) and the base
with `proposed` applied, and answers both results side by side when the
run is done (docs/api.md). It changes nothing, so viewers may call it. The
run happens in a niced worker process (`api.rest.simulation`), never on the
scheduler's loop; it is bounded by `MAX_REQUESTS` arrivals per config
(refused up front, 400) and by `SIMULATION_TIME_LIMIT_SECONDS` (503 past it).

`GET simulate/<run_id>/` reports a run's progress; `DELETE` cancels it, and
so does the client going away (`api.rest.abandon` sets the run's flag when
Daphne reports the disconnect), which stops the worker within milliseconds.

`GET recording/` hands out what `recent` would replay (this replica's
recorded window, the fleet, the classifier's windows and the live config),
to replay elsewhere or keep as a test fixture.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from api.rest.abandon import ABANDONED
from api.rest.errors import nested_errors, split_path
from api.rest.permissions import AnyRole
from api.rest.query_params import int_param, int_parameter
from api.rest.serializers_simulate import (
    SimulateRequestSerializer,
    SimulateResponseSerializer,
    SimulationRunSerializer,
)
from api.rest.simulation import (
    NoTraffic,
    SimulationBusy,
    StarterBusy,
    build_job,
    checked_spec,
    runs,
    submit,
)
from api.rest.views.base import ApiView, errors
from api.store import selectors
from api.wire.rule_reports import sample_scope
from api.wire.traffic_recording import capture_on_loop
from scheduler_core.errors import FieldError
from scheduler_core.recording import recording_of
from scheduler_core.whatif import SpecError, SpecInvalid
from scheduler_core.whatif_model import ConfigSet
from scheduler_core.whatif_spec import WINDOW_RANGE

log = logging.getLogger(__name__)
# 503s of a service working as configured (the others are failures).
_EXPECTED = frozenset({"busy", "time_limit"})

__all__ = ["RecordingView", "SimulateRunView", "SimulateView"]


def _invalid(found: list[SpecError]) -> Response:
    """400 in the API's nested error shape; tenant ids may hold dots, so parts are kept."""
    parts = {f"#{i}": [*e.prefix, *split_path(e.path)] for i, e in enumerate(found)}
    field_errors = [FieldError(f"#{i}", e.message) for i, e in enumerate(found)]
    return Response(nested_errors(field_errors, parts.__getitem__), status=400)


def _owner(request: Request) -> tuple[str, Any]:
    if request.auth is not None:
        return ("token", getattr(request.auth, "pk", None))
    return ("user", getattr(request.user, "pk", None))


def _unavailable(message: str, code: str, retry_after: int | None = None) -> Response:
    response = Response({"detail": message, "code": code}, status=503)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    if code in _EXPECTED:
        # Every worker busy or a run past its time limit is the service
        # working as configured: Django's request log would record each
        # as an ERROR; a warning is what it is. (`_has_been_logged` is how
        # Django marks a response already logged.)
        log.warning("simulate: %s (503 %s)", message, code)
        response._has_been_logged = True  # type: ignore[attr-defined]
    return response


class SimulateView(ApiView):
    """Run a what-if simulation: the live (or scenario) config vs the proposed one."""

    permission_classes = [AnyRole]

    @extend_schema(
        operation_id="simulate_create",
        summary="Run a what-if simulation",
        request=SimulateRequestSerializer,
        responses={
            200: SimulateResponseSerializer,
            409: OpenApiResponse(description="cancelled, run id in use, or no traffic here"),
            429: OpenApiResponse(description="this user or token already runs its simulations"),
            503: OpenApiResponse(description="time limit passed, or every worker busy"),
            **errors(400, 413, 415),
        },
    )
    def post(self, request: Request) -> Response:
        try:
            spec = checked_spec(request.data)
            capture = None
            if spec.kind == "recent":
                assert spec.window_seconds is not None
                capture = async_to_sync(capture_on_loop)(spec.window_seconds)
            job = build_job(spec, capture)
        except SpecInvalid as exc:
            return _invalid(exc.errors)
        except NoTraffic as exc:
            return Response({"detail": str(exc), "code": "no_traffic"}, status=409)
        scope = getattr(request._request, "scope", None) or {}
        try:
            run = runs.start(spec.run_id, _owner(request), scope.get(ABANDONED))
        except StarterBusy as exc:
            busy = Response({"detail": str(exc), "code": "starter_busy"}, status=429)
            busy["Retry-After"] = "5"
            return busy
        if run is None:
            detail = f"a simulation with run_id {spec.run_id!r} is still running"
            return Response({"detail": detail, "code": "run_id_in_use"}, status=409)
        try:
            outcome = submit(job, run)
        except SimulationBusy as exc:
            runs.finish(run, "failed")
            return _unavailable(str(exc), "busy", retry_after=5)
        kind = outcome[0]
        if kind == "done":
            body = outcome[1]
            body["workload"]["run_id"] = run.run_id
            if spec.kind == "recent":
                # This replica's traffic only: the answer names whose, and whose not.
                body["workload"].update(sample_scope())
            return Response(body)
        if kind == "invalid":
            # Every error the worker found (each unknown proposed tenant), at once.
            found = [SpecError(tuple(p), str(path), str(m)) for p, path, m in outcome[1]]
            return _invalid(found)
        if kind == "cancelled":
            return Response({"detail": str(outcome[1]), "code": "cancelled"}, status=409)
        if kind == "timeout":
            return _unavailable(str(outcome[1]), "time_limit")
        return _unavailable(f"the simulation failed: {outcome[1]}", "worker_failed")


class SimulateRunView(ApiView):
    """One run's progress (GET) or cancellation (DELETE), by its starter only."""

    permission_classes = [AnyRole]

    def _run(self, request: Request, run_id: str) -> Any:
        # Only the starter's own run by that id: another's is not theirs to see.
        return runs.get(run_id, _owner(request))

    @extend_schema(
        operation_id="simulate_run_retrieve",
        summary="Get a simulation's progress",
        responses={200: SimulationRunSerializer, **errors(404)},
    )
    def get(self, request: Request, run_id: str) -> Response:
        run = self._run(request, run_id)
        if run is None:
            return Response({"detail": f"no simulation {run_id!r} of yours"}, status=404)
        return Response(run.view())

    @extend_schema(
        operation_id="simulate_run_destroy",
        summary="Cancel a simulation",
        responses={202: SimulationRunSerializer, **errors(404)},
    )
    def delete(self, request: Request, run_id: str) -> Response:
        run = self._run(request, run_id)
        if run is None:
            return Response({"detail": f"no simulation {run_id!r} of yours"}, status=404)
        run.cancel.set()
        return Response(run.view(), status=status.HTTP_202_ACCEPTED)


class RecordingView(ApiView):
    """The recorded traffic `recent` replays: a window, the fleet, the live config."""

    @extend_schema(
        operation_id="recording_retrieve",
        summary="Get the recorded traffic",
        parameters=[
            int_parameter(
                "window_seconds",
                default=900,
                minimum=WINDOW_RANGE[0],
                maximum=WINDOW_RANGE[1],
                description="the last N seconds",
            )
        ],
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="the recording"),
            409: OpenApiResponse(description="no scheduler runs in this process"),
            **errors(400),
        },
    )
    def get(self, request: Request) -> Response:
        low, high = WINDOW_RANGE
        window = int_param(request, "window_seconds", default=900, minimum=low, maximum=high)
        capture = async_to_sync(capture_on_loop)(window)
        if capture is None:
            detail = "no traffic is recorded here: the scheduler has not started in this process"
            return Response({"detail": detail, "code": "no_traffic"}, status=409)
        recording = recording_of(capture.capture)
        recording["fleet"] = [list(q) for q in capture.fleet]
        recording["windows"] = capture.windows
        live = ConfigSet(selectors.queue_config_get(), selectors.tenant_limits_all())
        recording["config"] = live.raw()
        # Replayed elsewhere, it still says whose traffic it is, and whose it lacks.
        recording.update(sample_scope())
        return Response(recording)
