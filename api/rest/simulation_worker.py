"""The what-if simulation's job and the worker process that runs it.

A simulation is seconds of pure-Python work. Run on a view thread it would
take the GIL from the scheduler's event loop, so it runs in a spawned
worker process at a lower CPU priority (`api.rest.offload_boot`'s
niceness), which reads jobs from a pipe, one at a time, and answers each
with one final message, sending `("progress", fraction)` on the way.

Like `api.rest.offload_boot`, this module imports nothing of Django or of
the rest of the project at module level, only `scheduler_core`: a spawned
worker imports it before anything is set up, and the job it gets is plain
values (the request spec, the two configs, the captured traffic), so the
worker needs no database.

`run_job` is the whole computation; the view calls it in-process too
(`SIMULATION_IN_WORKER_PROCESS` off, or an in-memory test database).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler_core.recording import Capture, recording_of
from scheduler_core.validation import queue_config_to_dict
from scheduler_core.whatif import run_whatif, workload_errors
from scheduler_core.whatif_engine import SimulationCancelled, SimulationTimeLimit
from scheduler_core.whatif_model import ConfigSet, WorkloadError
from scheduler_core.whatif_scenarios import scenario_workload
from scheduler_core.whatif_spec import SimulationSpec
from scheduler_core.whatif_workload import recent_workload

__all__ = ["PROGRESS_EVERY_SECONDS", "SimulationJob", "run_job", "worker_main"]

# The worker tells the page how far it is at most this often.
PROGRESS_EVERY_SECONDS = 0.2

Outcome = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class SimulationJob:
    """Everything one run needs, as plain picklable values.

    For `recent`, either `capture` (copied from the live recorder on the
    scheduler's loop) with the `fleet` and classifier `windows` of that
    moment, or a ready `recording` (a test fixture) with them inside.
    """

    spec: SimulationSpec
    live: ConfigSet
    proposed: ConfigSet
    time_limit: float
    capture: Capture | None = None
    fleet: Sequence[tuple[str, int]] = ()
    windows: dict[str, float] | None = None
    recording: dict[str, Any] | None = None


def _recording(job: SimulationJob) -> dict[str, Any]:
    if job.recording is not None:
        return job.recording
    assert job.capture is not None
    recording = recording_of(job.capture)
    recording["fleet"] = [list(q) for q in job.fleet]
    recording["windows"] = dict(job.windows or {})
    return recording


def run_job(
    job: SimulationJob,
    *,
    should_stop: Callable[[], bool] | None = None,
    progress: Callable[[float], None] | None = None,
) -> Outcome:
    """One simulation; always answers with one outcome tuple, never raises for input.

    ("done", body) | ("invalid", [(prefix, path, message), ...]) (every error
    found, e.g. each unknown proposed tenant) | ("cancelled", message) |
    ("timeout", message).
    """
    spec = job.spec
    started = time.monotonic()
    try:
        if spec.kind == "recent":
            workload = recent_workload(_recording(job), spec.knobs, spec.seed)
        else:
            assert spec.scenario is not None
            workload = scenario_workload(spec.scenario, spec.knobs, spec.seed)
        body = run_whatif(
            workload,
            job.live,
            job.proposed,
            seed=spec.seed,
            deadline=started + job.time_limit,
            should_stop=should_stop,
            progress=progress,
            named_tenants=tuple(spec.tenants),
        )
    except WorkloadError as exc:
        return ("invalid", [(e.prefix, e.path, e.message) for e in workload_errors(exc)])
    except SimulationCancelled as exc:
        return ("cancelled", str(exc))
    except SimulationTimeLimit as exc:
        return (
            "timeout",
            f"the simulation passed its time limit of {job.time_limit:g} s ({exc}); "
            "shorten knobs.duration_seconds or lower knobs.arrival_factor",
        )
    described = body["workload"]
    described["proposed"] = {"settings": dict(spec.settings), "tenants": dict(spec.tenants)}
    # The base the proposal was laid on: a scenario's whole config; for the
    # live one only the settings (its tenants are the store's, and may be many).
    described["config"] = (
        job.live.raw()
        if spec.kind != "recent"
        else {"settings": queue_config_to_dict(job.live.config)}
    )
    described["elapsed_seconds"] = round(time.monotonic() - started, 3)
    described["time_limit_seconds"] = job.time_limit
    return ("done", body)


def worker_main(conn: Any, cancel: Any, parent_pid: int, niceness: int) -> None:
    """The worker process: jobs in from `conn`, outcomes out; ends with its parent.

    `cancel` is a multiprocessing Event the parent sets to stop the current
    run; the engine looks at it every few thousand events.
    """
    from api.rest.offload_boot import exit_with_parent

    exit_with_parent(parent_pid)
    os.nice(niceness)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        last = [0.0]

        def progress(fraction: float, last: list[float] = last) -> None:
            now = time.monotonic()
            if now - last[0] >= PROGRESS_EVERY_SECONDS:
                last[0] = now
                conn.send(("progress", round(fraction, 4)))

        try:
            outcome = run_job(job, should_stop=cancel.is_set, progress=progress)
        except Exception as exc:  # a bug: answer it rather than leave the view waiting
            outcome = ("error", f"{type(exc).__name__}: {exc}")
        conn.send(outcome)
