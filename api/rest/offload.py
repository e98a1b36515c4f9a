"""The runtime-config import, run in a worker process so the scheduler keeps the GIL.

The scheduler's event loop lives in the same process as Django's sync views.
A 1,000-tenant import is seconds of pure-Python work (YAML construction,
validation, planning, ORM rows); run in a view thread it holds the GIL, and
the loop, which gives up the GIL on every socket call, then waits for it
each time: dispatch fell to a fifth while imports ran. So the whole import
(parse + validate + plan + write) runs in one spawned worker process with
its own GIL, and this process only waits on a pipe.

Invariants:
- The worker uses this process's database: it is given the effective
  database NAME (pytest-django renames it for tests), and an in-memory
  SQLite database, which no other process can see, is imported in-process.
- The worker commits; then THIS process calls `config_events.publish`,
  because the running scheduler (and, through it, other replicas) listens
  here. The worker's own publish has no subscribers.
- The worker never outlives this process: it exits when its parent dies,
  `kill -9` included (`api.rest.offload_boot`), and so, with it, does
  multiprocessing's resource tracker.
- A worker that dies mid-import gives `ImportWorkerDied` (503) and the pool
  is replaced (had it committed, the scheduler's reconcile-by-version loop
  applies that version without the publish); a worker found dead before the job was handed over is
  replaced and the job sent to the new one, since nothing can have run.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import close_old_connections, connection
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError

from api.rest.content import parse_body
from api.rest.errors import ROOT
from api.rest.offload_boot import worker_init
from api.store import config_events, services
from api.store.exceptions import ConfigValidationError, VersionConflict
from api.store.import_plan import ImportResult
from scheduler_core.errors import FieldError
from scheduler_core.fields import meant_field

__all__ = [
    "ImportAuthor",
    "ImportJob",
    "ImportOutcome",
    "ImportWorker",
    "ImportWorkerDied",
    "import_body",
    "import_run",
    "import_submit",
    "WorkerRole",
    "shared_worker",
    "overrides_of",
    "worker_enabled",
]

log = logging.getLogger(__name__)

OVERRIDES = "overrides"

T = TypeVar("T")


class ImportWorkerDied(APIException):
    """The import worker process exited before it answered (503: try again)."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "the config import worker process exited before it answered"
    default_code = "import_worker_died"


# A worker per kind of job: a viewer may run dry runs (seconds each over
# 1,000 tenants) one after another, and in a worker shared with imports
# they queued ahead of an editor's import, which waited for all of them.
WorkerRole = Literal["import", "dry-run"]
# What a worker's death mid-job tells the caller (`ImportWorkerDied`, 503).
_DIED: dict[WorkerRole, str] = {
    "import": (
        "the config import worker process exited before it answered; "
        "a new one is started for the next import. Whether this import "
        "was committed is unknown: GET runtime-config shows the current state"
    ),
    "dry-run": (
        "the dry-run worker process exited before it answered; a new one is "
        "started for the next dry run. A dry run saves nothing: try it again"
    ),
}


@dataclass(frozen=True, slots=True)
class ImportAuthor:
    """Who imports, as plain data a worker can rebuild: a user's pk, or a name."""

    user_id: int | None
    username: str
    is_authenticated: bool = True

    def get_username(self) -> str:
        return self.username


@dataclass(frozen=True, slots=True)
class ImportJob:
    """A runtime-config PUT, as read by the view: the raw body, not yet parsed."""

    body: bytes
    media_type: str
    author: ImportAuthor | None
    dry_run: bool
    source: str
    # The If-Match / If-None-Match the view read: checked again in the
    # worker's transaction (see `services.runtime_config_import`).
    expected_version: int | None = None
    require_empty: bool = False
    # A dry run's recent traffic, (tenant, sampled rows) each, and the
    # queriers known now: the report then replays it (`api.rest.dry_run`).
    traffic: tuple[tuple[str, tuple[tuple[Any, ...], ...]], ...] | None = None
    queriers: tuple[str, ...] = ()
    # The view found the preconditions unmet (428 or 412): the file is still
    # parsed and validated, so a bad file is a 400 first, but nothing is written.
    refused: bool = False


@dataclass(frozen=True, slots=True)
class ImportOutcome:
    """What the view answers: the response body, or why the file was refused.

    `tenant_ids` are the file's IDs, for error paths through dotted IDs.
    """

    body: dict[str, Any] | None = None
    errors: list[FieldError] = field(default_factory=list)
    tenant_ids: list[str] = field(default_factory=list)
    parse_error: str | None = None
    # Set when the expected version did not hold: the current version.
    conflict: bool = False
    current_version: int | None = None

    @property
    def applied_version(self) -> int | None:
        """The committed version when the import changed something."""
        if self.body is None or not self.body["applied"]:
            return None
        version = self.body["version"]
        return int(version) if version is not None else None


def import_body(result: ImportResult, dry_run: bool, top_level: list[str]) -> dict[str, Any]:
    """The import's outcome (or, for a dry run, its plan) as the response body."""
    return {
        "dry_run": dry_run,
        "applied": not dry_run and result.has_changes,
        "created": result.created,
        "changed": result.changed,
        "deleted": result.deleted,
        "unchanged": result.unchanged,
        "ignored": result.ignored,
        "ignored_top_level": top_level,
        "diffs": {
            tenant_id: [{"path": c.path, "before": c.before, "after": c.after} for c in changes]
            for tenant_id, changes in result.diffs.items()
        },
        "version": result.version,
        "revision_id": result.revision_id,
    }


def overrides_of(document: Any) -> tuple[Any, list[str]]:
    """The file's `overrides` (None read as no tenants) and its other top-level keys.

    Other top-level sections of Cortex's runtime config (`multi_kv_config`,
    ...) are ignored and reported; one that misspells `overrides` is refused
    at its key, as a misspelt tenant field is: ignored, `overides:` beside a
    correct `overrides:` would drop the tenants it holds, and with none, the
    message "overrides: required" did not say which line was meant.
    """
    if document is None:
        # Empty, comments only, or `null`: read as a mapping it would delete
        # every tenant (Cortex loads it as "no overrides"); deliberately refused.
        message = (
            "the file is empty: a runtime-config file needs an overrides: mapping "
            "of tenants, the complete tenant set"
        )
        raise ConfigValidationError([FieldError(ROOT, message)])
    if not isinstance(document, Mapping):
        raise ConfigValidationError([FieldError(ROOT, "a runtime-config file must be a mapping")])
    misspelt = [
        FieldError(str(key), f"unknown top-level key; did you mean {OVERRIDES}?")
        for key in document
        if meant_field(str(key), (OVERRIDES,)) is not None
    ]
    if misspelt:
        raise ConfigValidationError(misspelt)
    if OVERRIDES not in document:
        message = "required: the file's overrides are the complete tenant set"
        raise ConfigValidationError([FieldError(OVERRIDES, message)])
    others = sorted(str(key) for key in document if key != OVERRIDES)
    overrides = document[OVERRIDES]
    return ({} if overrides is None else overrides), others


def _author_model(author: ImportAuthor | None) -> Any:
    if author is None or author.user_id is None:
        return author
    user = get_user_model().objects.filter(pk=author.user_id).first()
    return user if user is not None else author


def import_run(job: ImportJob) -> ImportOutcome:
    """Parse, validate, plan and (unless a dry run) write: in whichever process."""
    overrides: Any = None
    try:
        document = parse_body(job.body, job.media_type)
        overrides, top_level = overrides_of(document)
        result = services.runtime_config_import(
            overrides=overrides,
            author=_author_model(job.author),
            source=job.source,
            dry_run=job.dry_run or job.refused,
            expected_version=job.expected_version,
            require_empty=job.require_empty,
        )
    except ParseError as exc:
        return ImportOutcome(parse_error=str(exc.detail))
    except VersionConflict as exc:
        return ImportOutcome(conflict=True, current_version=exc.current_version)
    except ConfigValidationError as exc:
        ids = [str(k) for k in overrides] if isinstance(overrides, Mapping) else []
        return ImportOutcome(errors=list(exc.errors), tenant_ids=ids)
    body = import_body(result, job.dry_run, top_level)
    if job.refused:
        return ImportOutcome(body=body)
    if job.dry_run and job.traffic is not None:
        from api.rest.dry_run import traffic_report

        body["traffic"] = traffic_report(overrides, job.traffic, job.queriers)
    return ImportOutcome(body=body)


def _worker_import(job: ImportJob) -> ImportOutcome:
    close_old_connections()
    try:
        return import_run(job)
    finally:
        close_old_connections()


# A ProcessPoolExecutor starts its worker in the thread that submits, and
# Linux sends the parent-death signal when *that thread* exits: request
# threads come and go, so every submit goes through this one thread, which
# lives as long as the process (see `api.rest.offload_boot`).
_launcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="import-worker-launcher")


class ImportWorker:
    """One lazily spawned worker process, replaced whenever it dies.

    The worker exits by itself when this process dies, even by `kill -9`
    (`offload_boot.exit_with_parent`), so no orphan is left running.
    """

    def __init__(self, database_name: str, role: WorkerRole = "import") -> None:
        self.database_name = database_name
        self.role = role
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None

    def _pool(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ProcessPoolExecutor(
                    max_workers=1,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=worker_init,
                    initargs=(self.database_name, os.getpid()),
                )
            return self._executor

    @staticmethod
    def _submit(executor: ProcessPoolExecutor, function: Callable[..., T], *args: Any) -> Any:
        return _launcher.submit(executor.submit, function, *args).result()

    def _discard(self, executor: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._executor is executor:
                self._executor = None
        executor.shutdown(wait=False, cancel_futures=True)

    def call(self, function: Callable[..., T], *args: Any) -> T:
        """`function(*args)` in the worker; raises `ImportWorkerDied` if it dies."""
        executor = self._pool()
        try:
            future = self._submit(executor, function, *args)
        except BrokenProcessPool:
            # Died while idle: the job never reached it, so a new one may run it.
            log.warning("the %s worker process had died; starting a new one", self.role)
            self._discard(executor)
            executor = self._pool()
            future = self._submit(executor, function, *args)
        try:
            return future.result()
        except BrokenProcessPool as exc:
            self._discard(executor)
            raise ImportWorkerDied(_DIED[self.role]) from exc

    def close(self) -> None:
        """Stop the worker (tests, shutdown); the next call starts a new one."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)


_shared: dict[WorkerRole, ImportWorker] = {}
_shared_lock = threading.Lock()


def shared_worker(role: WorkerRole = "import") -> ImportWorker:
    """This process's worker for `role`, for its current database."""
    name = str(connection.settings_dict["NAME"])
    with _shared_lock:
        worker = _shared.get(role)
        if worker is None or worker.database_name != name:
            if worker is not None:
                worker.close()
            worker = _shared[role] = ImportWorker(name, role)
        return worker


def worker_enabled() -> bool:
    """Whether imports go to the worker: the setting, and a shareable database."""
    if not getattr(settings, "CONFIG_IMPORT_IN_WORKER_PROCESS", True):
        return False
    return not (connection.vendor == "sqlite" and connection.is_in_memory_db())


def import_submit(job: ImportJob) -> ImportOutcome:
    """Run the import (in the worker when enabled); publish its version here."""
    if not worker_enabled():
        return import_run(job)
    outcome = shared_worker().call(_worker_import, job)
    version = outcome.applied_version
    if version is not None:
        config_events.publish(version)
    return outcome
