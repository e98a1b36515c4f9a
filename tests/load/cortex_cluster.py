"""The schedulers `cortex_bench` puts under real Cortex: Cortex's or ours, one or N replicas.

With `replicas` above 1 every replica listens for gRPC on the same port of
its own loopback address (127.0.0.1, 127.0.0.2, ...), and Cortex dials one
host name that resolves to all of them: Cortex v1.15.3's
`-frontend.scheduler-address` and `-querier.scheduler-address` take one
`host:port`, resolve the host with Go's LookupHost every DNS lookup period
and connect to every address it returns (pkg/util/grpcutil/dns_resolver.go).
On one machine that name comes from /etc/hosts (`hosts_lines` says what to
add). Our replicas share one PostgreSQL database and one Redis, started here
from Debian's binaries (tests/servers.py), as operators run scale-out.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from tests.load.bench_processes import free_port, http_ok, manage

__all__ = [
    "ScaleOut",
    "Scheduler",
    "hosts_lines",
    "replica_hosts",
    "resolves_to_replicas",
    "scale_out",
]

# Variables of the caller's shell that would point our server elsewhere.
OUR_ENV_DROPPED = (
    "DATABASE_URL",
    "REDIS_URL",
    "CHANNEL_PREFIX",
    "REPLICA_ID",
    "GRPC_ADVERTISE_ADDRESS",
    "GRPC_TLS_CERT_PATH",
    "GRPC_TLS_KEY_PATH",
    "GRPC_TLS_CA_PATH",
    "GRPC_TLS_CLIENT_AUTH",
    "GRPC_CLIENT_TLS_ENABLED",
    "GRPC_SERVER",
    "GRPC_WRITE_BATCHING",
    "EVENT_LOOP",
    "DJANGO_SETTINGS_MODULE",
    "METRICS_REQUIRE_LOGIN",
)


@dataclass
class Scheduler:
    """Every process of one scheduler (its replicas) and what Cortex dials."""

    procs: list[subprocess.Popen[bytes]]
    metrics_urls: list[str]
    address: str  # host:port for -frontend/-querier.scheduler-address


@dataclass
class ScaleOut:
    """The shared PostgreSQL and Redis of our replicas (None: one replica, SQLite)."""

    database_url: str
    redis_url: str
    running: list[Any] = field(default_factory=list)


def replica_hosts(replicas: int) -> list[str]:
    return [f"127.0.0.{i + 1}" for i in range(replicas)]


def hosts_lines(name: str, replicas: int) -> str:
    return "\n".join(f"{host} {name}" for host in replica_hosts(replicas))


def resolves_to_replicas(name: str, replicas: int) -> bool:
    """True when `name` resolves to exactly the replicas' loopback addresses."""
    try:
        found = {info[4][0] for info in socket.getaddrinfo(name, None, socket.AF_INET)}
    except OSError:
        return False
    return found == set(replica_hosts(replicas))


@contextmanager
def scale_out() -> Iterator[ScaleOut]:
    """A throwaway PostgreSQL and Redis for the run, stopped and removed after it."""
    from tests.servers import _start_postgres, _start_redis

    pg_port, redis_port = free_port(), free_port()
    out = ScaleOut(
        database_url=f"postgres://qi@127.0.0.1:{pg_port}/qi",
        redis_url=f"redis://127.0.0.1:{redis_port}/0",
    )
    import shutil

    try:
        out.running.append(_start_postgres(pg_port))
        out.running.append(_start_redis(redis_port))
        yield out
    finally:
        for server in reversed(out.running):
            server.stop()
            shutil.rmtree(server.directory, ignore_errors=True)


def our_env(
    workdir: Path,
    grpc_port: int,
    *,
    extra: dict[str, str] | None = None,
    cluster: ScaleOut | None = None,
    replica: int = 0,
    prefix: str = "",
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in OUR_ENV_DROPPED}
    host = replica_hosts(replica + 1)[replica]
    env.update(
        VAR_DIR=str(workdir / "ours-var"),
        STATIC_ROOT=str(workdir / "ours-static"),
        GRPC_PORT=str(grpc_port),
        GRPC_HOST=host,
        GRPC_ADVERTISE_ADDRESS=f"{host}:{grpc_port}",
        LOG_LEVEL="WARNING",
        SECRET_KEY="cortex-bench-" + secrets.token_urlsafe(24),
        DEBUG="0",
    )
    if cluster is not None:
        env.update(
            DATABASE_URL=cluster.database_url,
            REDIS_URL=cluster.redis_url,
            CHANNEL_PREFIX=prefix,
            REPLICA_ID=f"replica-{replica + 1}",
        )
    env.update(extra or {})
    return env


def prepare_ours(project: Path, workdir: Path, cluster: ScaleOut | None) -> None:
    """`make serve`'s set-up steps, on a database of the bench's own."""
    python = str(project / ".venv" / "bin" / "python")
    env = our_env(workdir, 0, cluster=cluster, prefix="prepare")
    for command in (["migrate", "--noinput", "-v0"], ["collectstatic", "--noinput", "-v0"]):
        manage(python, project, env, *command)


Start = Callable[..., subprocess.Popen[bytes]]
Wait = Callable[[str, Callable[[], bool], subprocess.Popen[bytes], float], None]


def start_cortex_scheduler(
    start: Start, wait: Wait, cortex: str, workdir: Path, logs: Path, replicas: int, host: str
) -> Scheduler:
    """Cortex's `-target=query-scheduler`, one process per replica address."""
    grpc_port = free_port()
    procs, urls = [], []
    for i, ip in enumerate(replica_hosts(replicas)):
        http_port = free_port()
        proc = start(
            [
                cortex,
                "-target=query-scheduler",
                f"-server.http-listen-address={ip}",
                f"-server.http-listen-port={http_port}",
                f"-server.grpc-listen-address={ip}",
                f"-server.grpc-listen-port={grpc_port}",
                "-log.level=warn",
            ],
            logs / f"scheduler-{i + 1}.log",
            cwd=workdir,
        )
        url = f"http://{ip}:{http_port}"
        wait("Cortex query-scheduler", partial(http_ok, url + "/ready"), proc, 60)
        procs.append(proc)
        urls.append(url + "/metrics")
    return Scheduler(procs, urls, f"{host if replicas > 1 else '127.0.0.1'}:{grpc_port}")


def start_our_scheduler(
    start: Start,
    wait: Wait,
    project: Path,
    workdir: Path,
    logs: Path,
    replicas: int,
    host: str,
    *,
    extra: dict[str, str] | None = None,
    cluster: ScaleOut | None = None,
) -> Scheduler:
    """Our Daphne (as `make serve` runs it), one per replica address."""
    grpc_port = free_port()
    # config.serve is Daphne's command line, with EVENT_LOOP honoured. A
    # variant's PYTHON is the interpreter and its PROJECT the checkout whose
    # code runs (`-m` puts the working directory first on the path, ahead
    # of the editable install), not environment variables.
    extra = dict(extra or {})
    python = extra.pop("PYTHON", None) or str(project / ".venv" / "bin" / "python")
    code = Path(extra.pop("PROJECT", None) or project)
    if code != project:
        # A variant's checkout may have migrations the bench's own project has
        # not (a newer one): it refused to start on the shared database.
        env = our_env(workdir, 0, cluster=cluster, prefix="prepare")
        manage(python, code, env, "migrate", "--noinput", "-v0")
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    procs, urls = [], []
    for i, ip in enumerate(replica_hosts(replicas)):
        http_port = free_port()
        env = our_env(workdir, grpc_port, extra=extra, cluster=cluster, replica=i, prefix=prefix)
        proc = start(
            [python, "-m", "config.serve", "-b", "127.0.0.1", "-p", str(http_port)]
            + ["config.asgi:application"],
            logs / f"scheduler-{i + 1}.log",
            cwd=code,
            env=env,
        )
        url = f"http://127.0.0.1:{http_port}"
        # Daphne has no lifespan: the first request starts the runtime and the door.
        wait("our scheduler", partial(http_ok, url + "/healthz"), proc, 120)
        wait("our gRPC door", partial(_tcp_open, ip, grpc_port), proc, 60)
        procs.append(proc)
        urls.append(url + "/metrics")
    return Scheduler(procs, urls, f"{host if replicas > 1 else '127.0.0.1'}:{grpc_port}")


def _tcp_open(host: str, port: int) -> bool:
    with socket.create_connection((host, port), timeout=1):
        return True
