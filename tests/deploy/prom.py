"""Helpers for the deploy/ tests: promtool, a real Prometheus, exported metric names.

`exported_names(text)` reads a /metrics exposition and returns every series
name a query may use (a histogram's `_bucket`/`_sum`/`_count`, a counter's
`_total`), so rules and dashboards can be checked against what the server
really exports. `Prometheus` runs Debian's `prometheus` binary on a free
loopback port with a temporary data directory (scripts/test-deps.sh installs it).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import promql_parser

from loadgen.daphne_process import free_port

__all__ = ["DEPLOY", "SCRAPE_SERIES", "Prometheus", "exported_names", "metric_names", "tool"]

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
# Series Prometheus writes for each target itself, not read from /metrics.
SCRAPE_SERIES = frozenset({"up"})

_SUFFIXES = {
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("", "_sum", "_count", "_created"),
    "counter": ("_total", "_created"),
}


def tool(name: str) -> str:
    """The path of a Prometheus binary; fails (not skips) when it is missing."""
    path = shutil.which(name)
    assert path, f"{name} not found: `make test` installs Debian's prometheus package"
    return path


def exported_names(exposition: str) -> set[str]:
    """Every series name the exposition's families define (even with no samples yet)."""
    names: set[str] = set()
    for line in exposition.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(maxsplit=3)
            suffixes = _SUFFIXES.get(kind, ("",))
            names.update(name + s for s in suffixes)
            if kind == "counter" and name.endswith("_total"):
                names.add(name)
        elif line and not line.startswith("#"):
            names.add(line.split("{", 1)[0].split(" ", 1)[0])
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (parsed, so it must parse)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        name = getattr(node, "name", None)
        if isinstance(node, promql_parser.VectorSelector) and name:
            found.add(name)
        for attr in ("expr", "lhs", "rhs", "vector_selector", "param"):
            child = getattr(node, attr, None)
            if child is not None and not isinstance(child, str | int | float):
                walk(child)
        for child in getattr(node, "args", None) or ():
            walk(child)

    walk(promql_parser.parse(expr))
    return found


class Prometheus:
    """A real Prometheus scraping `target` every `interval`, evaluating `rules` every `evaluation`.

    With `credentials_file`, each scrape sends the token in it as
    `Authorization: Bearer <token>`; Prometheus reads the file at each
    scrape, so the token may be written there after Prometheus starts.
    """

    def __init__(
        self,
        target: str,
        rules: Path,
        *,
        interval: str = "1s",
        evaluation: str = "1s",
        credentials_file: Path | None = None,
    ) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="qi-prometheus-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        job: dict[str, Any] = {
            "job_name": "queue-inspector",
            "static_configs": [{"targets": [target]}],
        }
        if credentials_file is not None:
            job["authorization"] = {"type": "Bearer", "credentials_file": str(credentials_file)}
        config = {
            "global": {"scrape_interval": interval, "evaluation_interval": evaluation},
            "rule_files": [str(rules)],
            "scrape_configs": [job],
        }
        (self.tmp / "prometheus.yml").write_text(json.dumps(config))
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> Prometheus:
        log = open(self.tmp / "prometheus.log", "wb")  # noqa: SIM115 - closed below
        self.proc = subprocess.Popen(
            [
                tool("prometheus"),
                f"--config.file={self.tmp / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"prometheus exited:\n{self.log()}"
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"{self.url}/-/ready", timeout=1).read()
                return self
            time.sleep(0.2)
        raise AssertionError(f"prometheus never became ready:\n{self.log()}")

    def api(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}", timeout=5) as response:
            body = json.load(response)
        assert body["status"] == "success", body
        return body["data"]

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return (self.tmp / "prometheus.log").read_text(errors="replace")[-4000:]
        return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        shutil.rmtree(self.tmp, ignore_errors=True)
