"""Many config writers at once in a real database, then the history's invariants.

`manage` runs `manage.py` in a subprocess against a database URL (a fresh
PostgreSQL database or a SQLite file), so every writer thread has its own
connection and the database's own locking decides the races.
`MIXED_WRITERS` is the script: seeded threads create, replace, patch and
delete tenants, import runtime-configs and roll back revisions, each with
the version it read (so most lose a race), and the script prints what the
history then says as one JSON line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["MIXED_WRITERS", "manage", "mixed_writers_outcome"]

ROOT = Path(__file__).resolve().parents[3]

MIXED_WRITERS = """
import json, random, threading
from django.db import connection
from api.store import selectors, services
from api.store.exceptions import NotFound, VersionConflict
from api.store.models import ConfigRevision, Tenant

TENANTS = ("a", "b", "c")
barrier, done = threading.Barrier(4), []

def write(rng):
    tid = rng.choice(TENANTS)
    seen = Tenant.objects.filter(tenant_id=tid).values_list("version", flat=True).first()
    block = {"max_queriers_per_tenant": rng.randint(0, 9)}
    op = rng.choice(("put", "patch", "delete", "rollback", "import"))
    common = {"tenant_id": tid, "author": None, "source": "cli", "expected_version": seen}
    if op == "put":
        services.tenant_put(config=block, **common)
    elif op == "patch" and seen is not None:
        services.tenant_patch(changes=block, **common)
    elif op == "delete" and seen is not None:
        services.tenant_delete(**common)
    elif op == "rollback":
        ids = list(ConfigRevision.objects.values_list("pk", flat=True))
        if ids:
            services.revision_rollback(
                revision_id=rng.choice(ids), author=None,
                expected_config_version=selectors.config_version_get())
    elif op == "import":
        version = selectors.overrides_version_get()
        overrides = selectors.runtime_config_export()
        overrides[tid] = block
        services.runtime_config_import(overrides=overrides, author=None, expected_version=version)
    else:
        return "skipped"
    return op

def writer(seed):
    rng = random.Random(seed)
    barrier.wait()
    try:
        for _ in range(30):
            try:
                done.append(write(rng))
            except (VersionConflict, NotFound):
                done.append("refused")
    finally:
        connection.close()

threads = [threading.Thread(target=writer, args=(seed,)) for seed in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]

revisions = list(ConfigRevision.objects.order_by("version"))
versions = [r.version for r in revisions]
state, breaks, last_change = {}, [], {}
for r in revisions:
    if r.kind == "tenant":
        if state.get(r.key) != r.before:
            breaks.append(r.version)
        changed = {r.key: r.after}
    elif r.kind == "runtime-config":
        if state != (r.before or {}):
            breaks.append(r.version)
        changed = {t: (r.after or {}).get(t) for t in set(state) | set(r.after or {})}
        changed = {t: b for t, b in changed.items() if b != state.get(t)}
    else:
        continue
    for tid, after in changed.items():
        last_change[tid] = r.version
        if after is None:
            state.pop(tid, None)
        else:
            state[tid] = after
stored = {t.tenant_id: (t.config, t.version) for t in Tenant.objects.all()}
print(json.dumps({
    "writes": sum(1 for d in done if d not in ("refused", "skipped")),
    "refused": done.count("refused"),
    "gap_free": versions == list(range(1, len(versions) + 1)),
    "config_version_is_the_last": selectors.config_version_get() == (versions or [0])[-1],
    "broken_links": breaks,
    "replayed_is_stored": state == {t: c for t, (c, _) in stored.items()},
    "versions_are_last_changes": all(v == last_change.get(t) for t, (_, v) in stored.items()),
}))
"""


def manage(database_url: str, *args: str) -> str:
    """`manage.py args...` against `database_url`; its stdout (fails the test on an error)."""
    env = {**os.environ, "DATABASE_URL": database_url, "SECRET_KEY": "test"}
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def mixed_writers_outcome(database_url: str) -> dict[str, Any]:
    """Migrate, run `MIXED_WRITERS` and read its JSON line."""
    manage(database_url, "migrate", "--noinput", "-v0")
    outcome: dict[str, Any] = json.loads(
        manage(database_url, "shell", "-c", MIXED_WRITERS).strip().splitlines()[-1]
    )
    return outcome
