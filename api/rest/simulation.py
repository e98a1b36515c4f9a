"""Running what-if simulations for the REST API: jobs, worker processes, progress, cancel.

- `checked_spec` reads a request and refuses it with every problem at
  once: its shape, the proposed tenant IDs, the proposal judged against the
  base config the workload names, and (for a scenario) tenants it lacks.
- `build_job` turns a checked request into a `SimulationJob`: the base
  config (the live one from the store for `recent`, the scenario's own
  otherwise), the proposed one (base + overrides, judged by
  `scheduler_core.validation`), and for `recent` a capture of this
  replica's recorded traffic taken on the scheduler's loop. Multi-tenant
  ids (`a|b`) in the traffic get the limits the gRPC door derives for them
  (`combined_limits`), under each config.
- `submit` runs it in one of `SIMULATION_WORKERS` (default 2) spawned,
  niced worker processes (`api.rest.simulation_worker`), started lazily
  from one long-lived thread (the parent-death signal is tied to the
  thread that starts a process) and reused. All busy: 503 at once. One
  starter (a user or a token) runs at most `SIMULATION_RUNS_PER_STARTER`
  (default 1) at a time: 429 past it. The calling view thread only waits
  on a pipe, so the scheduler keeps the GIL.
- Every run has a `RunState` in this process, by its starter and run id
  (one user's run id neither blocks nor reveals another's): its progress
  for `GET simulate/<run_id>/`, and a cancel flag that `DELETE` and a
  client disconnect set. A cancelled worker stops within one engine check (a few
  thousand events); one that does not answer in time is killed and replaced.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from api.rest.offload_boot import WORKER_NICENESS
from api.rest.simulation_worker import Outcome, SimulationJob, run_job, worker_main
from api.store import selectors
from api.store.import_plan import tenant_id_errors
from scheduler_core.federation import combined_limits
from scheduler_core.model import QueueConfig, TenantLimits
from scheduler_core.whatif import SpecInvalid, merge_proposed, proposal_errors, unknown_tenants
from scheduler_core.whatif_model import ConfigSet
from scheduler_core.whatif_scenarios import scenario_base
from scheduler_core.whatif_spec import SimulationSpec, read_spec

__all__ = [
    "CANCEL_GRACE_SECONDS",
    "NoTraffic",
    "RunState",
    "SimulationBusy",
    "StarterBusy",
    "build_job",
    "checked_spec",
    "runs",
    "submit",
    "time_limit",
]

log = logging.getLogger(__name__)

# How long a cancelled worker may take to stop before it is killed, and how
# long past the time limit the view waits for a worker's own timeout answer.
CANCEL_GRACE_SECONDS = 2.0
LIMIT_GRACE_SECONDS = 5.0
_KEEP_FINISHED_SECONDS = 300.0


class SimulationBusy(Exception):
    """Every simulation worker is running a simulation (503: try again)."""


class StarterBusy(Exception):
    """The starter already runs `SIMULATION_RUNS_PER_STARTER` simulations (429: try again).

    The pool is shared: without it one viewer's two long runs held both
    workers, and every other user's run, an editor's too, was refused.
    """


class NoTraffic(Exception):
    """No scheduler runs in this process, so there is no recorded traffic (409)."""


def time_limit() -> float:
    """Seconds a simulation may run (`SIMULATION_TIME_LIMIT_SECONDS`, default 60)."""
    return float(settings.SIMULATION_TIME_LIMIT_SECONDS)


@dataclass(slots=True)
class RunState:
    """One run, as `GET`/`DELETE simulate/<run_id>/` see it."""

    run_id: str
    owner: tuple[str, Any]
    started: float = field(default_factory=time.monotonic)
    progress: float = 0.0
    state: str = "running"  # running, done, cancelled, failed
    finished: float | None = None
    cancel: threading.Event = field(default_factory=threading.Event)

    def view(self) -> dict[str, Any]:
        end = self.finished if self.finished is not None else time.monotonic()
        return {
            "run_id": self.run_id,
            "state": self.state,
            "progress": round(self.progress, 4),
            "elapsed_seconds": round(end - self.started, 3),
            "time_limit_seconds": time_limit(),
        }


class _Runs:
    """Run states by (owner, run id); finished ones are kept a few minutes for the page.

    Keyed by owner too: a run id is the client's to choose, so one user's
    must not be refused ("still running") because another's runs under it,
    which also told them it was in use.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[tuple[tuple[str, Any], str], RunState] = {}

    def start(
        self, run_id: str | None, owner: tuple[str, Any], cancel: threading.Event | None = None
    ) -> RunState | None:
        """A new running state, or None when `owner` already runs one as `run_id`.

        Raises `StarterBusy` when `owner` already runs its share of runs.
        `cancel` is the flag to stop it by (the request's abandon flag, so a
        client disconnect cancels the run too); a fresh one when None.
        """
        now = time.monotonic()
        with self._lock:
            for key, run in list(self._runs.items()):
                if run.finished is not None and now - run.finished > _KEEP_FINISHED_SECONDS:
                    del self._runs[key]
            run_id = run_id or uuid.uuid4().hex
            current = self._runs.get((owner, run_id))
            if current is not None and current.state == "running":
                return None
            share = int(settings.SIMULATION_RUNS_PER_STARTER)
            # A cancelled run is the starter's no more, though its worker may
            # take a moment to stop: the page's next run after Cancel was a 429.
            running = sum(
                1
                for (o, _), r in self._runs.items()
                if o == owner and r.state == "running" and not r.cancel.is_set()
            )
            if running >= share:
                raise StarterBusy(
                    f"you already run {running} simulation{'s' if running > 1 else ''}"
                    f" (SIMULATION_RUNS_PER_STARTER is {share}); try again when"
                    f" {'one ends' if running > 1 else 'it ends'}"
                )
            state = RunState(run_id, owner)
            if cancel is not None:
                state.cancel = cancel
            self._runs[owner, run_id] = state
            return state

    def get(self, run_id: str, owner: tuple[str, Any]) -> RunState | None:
        """`owner`'s run `run_id` (another's under the same id is not theirs to see)."""
        with self._lock:
            return self._runs.get((owner, run_id))

    def finish(self, run: RunState, state: str) -> None:
        with self._lock:
            run.state = state
            run.finished = time.monotonic()
            if state == "done":
                run.progress = 1.0


runs = _Runs()


def _with_multi_tenant_ids(configs: ConfigSet, tenant_ids: set[str]) -> ConfigSet:
    """Limits for each `a|b` id in the traffic, as the gRPC door derives them."""
    limits = dict(configs.limits)
    for tenant_id in tenant_ids:
        if "|" in tenant_id:
            parts = [configs.limits.get(t, TenantLimits()) for t in tenant_id.split("|")]
            limits[tenant_id] = combined_limits(parts)
    return ConfigSet(configs.config, limits)


def _tenant_id_problems(tenant_id: str) -> list[str]:
    return [e.message for e in tenant_id_errors(tenant_id)]


def checked_spec(raw: object) -> SimulationSpec:
    """The request's spec; raises `SpecInvalid` with every problem it has, at once.

    Its shape, each proposed tenant's ID (the store's rule) and the proposal
    judged against the base the workload names are one answer: a bad ID
    hid the errors of its block and of the settings until it was fixed.
    """
    spec, found = read_spec(raw, _tenant_id_problems)
    scenario = scenario_base(spec.scenario) if spec.scenario is not None else None
    if spec.kind == "recent":
        base_config: QueueConfig | None = selectors.queue_config_get()
    else:
        base_config = None if scenario is None else scenario.config
    found += proposal_errors(base_config, spec.settings, spec.tenants)
    if scenario is not None:
        # A scenario's traffic is its configured tenants' only; the recorded
        # traffic's tenants are known only once the worker reads it.
        found += unknown_tenants(spec.tenants, scenario.limits, "in this scenario")
    if found:
        raise SpecInvalid(found)
    return spec


def build_job(spec: SimulationSpec, capture: Any = None) -> SimulationJob:
    """The job for a checked spec; raises `SpecInvalid` for a bad proposed config.

    (`checked_spec` judged it; only a live config changed since can fail it.)
    `capture` is this replica's `LiveCapture` for `recent` (None: `NoTraffic`).
    """
    if spec.kind == "recent":
        if capture is None:
            raise NoTraffic(
                "no traffic is recorded here: the scheduler has not started in this "
                "process (it starts with the first request Daphne serves)"
            )
        base = ConfigSet(selectors.queue_config_get(), selectors.tenant_limits_all())
    else:
        assert spec.scenario is not None
        base = scenario_base(spec.scenario)
    proposed = merge_proposed(base, spec.settings, spec.tenants)
    if spec.kind != "recent":
        return SimulationJob(spec, base, proposed, time_limit())
    tenants = {key[0] for key in capture.capture.keys}
    return SimulationJob(
        spec,
        _with_multi_tenant_ids(base, tenants),
        _with_multi_tenant_ids(proposed, tenants),
        time_limit(),
        capture=capture.capture,
        fleet=capture.fleet,
        windows=capture.windows,
    )


class _Worker:
    """One spawned worker process and its pipe."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.cancel = context.Event()
        self.process = context.Process(
            target=worker_main,
            args=(child, self.cancel, os.getpid(), WORKER_NICENESS),
            name="simulation-worker",
            daemon=True,
        )
        self.process.start()
        child.close()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()


class _Pool:
    """Up to `size` workers; a worker is lent to one run at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._lent = 0
        # Processes are started from this one long-lived thread: the kernel's
        # parent-death signal fires when the starting *thread* exits.
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="simulation-spawn")

    def _size(self) -> int:
        return max(1, int(settings.SIMULATION_WORKERS))

    def acquire(self) -> _Worker:
        with self._lock:
            if self._lent >= self._size():
                raise SimulationBusy(
                    f"all {self._size()} simulation workers are busy; try again shortly"
                )
            self._lent += 1
            worker = self._idle.pop() if self._idle else None
        if worker is not None and worker.process.is_alive():
            return worker
        try:
            return self._spawner.submit(_Worker).result()
        except BaseException:
            with self._lock:
                self._lent -= 1
            raise

    def release(self, worker: _Worker, healthy: bool) -> None:
        if not healthy:
            worker.kill()
        with self._lock:
            self._lent -= 1
            if healthy:
                worker.cancel.clear()
                self._idle.append(worker)

    def close(self) -> None:
        """Stop the idle workers (tests); running ones end with their runs."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


pool = _Pool()


def _in_worker() -> bool:
    return bool(settings.SIMULATION_IN_WORKER_PROCESS)


def _wait(worker: _Worker, run: RunState, limit: float) -> tuple[Outcome, bool]:
    """The worker's final answer (and whether the worker is fit for reuse)."""
    deadline = time.monotonic() + limit + LIMIT_GRACE_SECONDS
    stop_by: float | None = None
    while True:
        if worker.conn.poll(0.1):
            try:
                message = worker.conn.recv()
            except (EOFError, OSError):
                return ("died", "the simulation worker process exited before it answered"), False
            if message[0] == "progress":
                run.progress = float(message[1])
                continue
            return tuple(message), True
        if run.cancel.is_set() and stop_by is None:
            worker.cancel.set()
            stop_by = time.monotonic() + CANCEL_GRACE_SECONDS
        if not worker.process.is_alive():
            return ("died", "the simulation worker process exited before it answered"), False
        now = time.monotonic()
        if stop_by is not None and now > stop_by:
            return ("cancelled", "the simulation was cancelled"), False
        if now > deadline:
            return ("timeout", f"the simulation passed its time limit of {limit:g} s"), False


def submit(job: SimulationJob, run: RunState) -> Outcome:
    """Run `job` (in a worker process unless that is turned off); its outcome."""
    if not _in_worker():

        def step(fraction: float) -> None:
            run.progress = fraction

        outcome = run_job(job, should_stop=run.cancel.is_set, progress=step)
    else:
        worker = pool.acquire()
        healthy = False
        try:
            worker.conn.send(job)
            outcome, healthy = _wait(worker, run, job.time_limit)
        finally:
            pool.release(worker, healthy)
    states = {"done": "done", "cancelled": "cancelled"}
    runs.finish(run, states.get(str(outcome[0]), "failed"))
    return outcome
