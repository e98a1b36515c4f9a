"""deploy/prometheus/alerts.yaml: promtool's checks and unit tests, and a real Prometheus.

Three more point a real Prometheus at a real server's /metrics with a
copy of the rules whose thresholds and `for:` are shortened, as an
operator's Prometheus would see it: one with a request stuck in the queue
(no querier) waits for the stuck-queue alert; one stops its server and
waits for the scrape alert to fire, then starts it again and waits for the
alert to clear; one takes its server's config table away, so every
reconcile fails, and waits for the stale-config alert, then puts it back.
The last scrapes a /metrics locked by METRICS_REQUIRE_LOGIN with a viewer
token, as an operator's Prometheus would.

Prometheus hands its scrapers their first targets only after about 5 s (its
service discovery's update tick, which 2.42 does not let us set), so each
Prometheus starts before its server does and the token is issued: those
waits overlap instead of adding up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from loadgen.daphne_process import DaphneProcess
from loadgen.wsclients import ws_connect
from tests.deploy.prom import (
    DEPLOY,
    SCRAPE_SERIES,
    Prometheus,
    exported_names,
    metric_names,
    tool,
)

RULES = DEPLOY / "prometheus" / "alerts.yaml"
RULE_TESTS = DEPLOY / "prometheus" / "alerts_test.yaml"


def run(*args: str, cwd: Path | None = None) -> str:
    result = subprocess.run(args, capture_output=True, text=True, cwd=cwd, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def alerts() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def test_the_alert_rules_pass_promtool_check() -> None:
    out = run(tool("promtool"), "check", "rules", str(RULES))
    assert f"SUCCESS: {len(alerts())} rules found" in out


def test_every_alert_has_a_promtool_unit_test_and_they_all_pass() -> None:
    tests = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    tested = {case["alertname"] for t in tests for case in t["alert_rule_test"]}
    assert tested == {rule["alert"] for rule in alerts()}
    for t in tests:
        fired = [c for c in t["alert_rule_test"] if c["exp_alerts"]]
        quiet = [c for c in t["alert_rule_test"] if not c["exp_alerts"]]
        assert fired and quiet, f"each alert needs a firing and a quiet case: {t}"
    assert "SUCCESS" in run(
        tool("promtool"), "test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent
    )


def test_every_metric_the_alerts_use_is_exported_by_the_server(scrape: str) -> None:
    exported = exported_names(scrape)
    for rule in alerts():
        missing = metric_names(rule["expr"]) - exported - SCRAPE_SERIES
        assert not missing, f"{rule['alert']} uses metrics the server does not export: {missing}"


# Thresholds in seconds, cut so a test sees the alert within seconds. The
# stale one stays above what a healthy server shows: its reconciles (0.5 s
# apart) as seen through 1 s scrapes and 0.5 s evaluations, 2 s at worst.
_SHORTENED = {
    "(cortex_query_scheduler_queue_max_wait_seconds) > 60": ("> 60", "> 1"),
    "(queue_inspector_config_last_reconcile_success_timestamp_seconds)\n  > 300": ("> 300", "> 4"),
}
# Twice the evaluation interval: each alert is still seen pending before it fires.
_FOR = "1s"
_EVALUATION = "500ms"


def shortened_rules(directory: Path) -> Path:
    """The rules with the stuck threshold at 1 s, the stale one at 4 s, every `for:` at 1 s."""
    doc = yaml.safe_load(RULES.read_text())
    rules = [rule for group in doc["groups"] for rule in group["rules"]]
    for text, (threshold, short) in _SHORTENED.items():
        (rule,) = [r for r in rules if text in r["expr"]]  # an edit of the rule must edit this
        rule["expr"] = rule["expr"].replace(text, text.replace(threshold, short))
    for rule in rules:
        rule["for"] = _FOR
    path = directory / "alerts-fast.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def token_file(server: DaphneProcess) -> Path:
    """Where the Prometheus of `watched_server(..., with_token=True)` reads its token."""
    return server.tmp / "prometheus-token"


def watching(server: DaphneProcess, *, with_token: bool = False) -> Prometheus:
    """A Prometheus (not started) scraping `server` with the shortened rules."""
    return Prometheus(
        f"127.0.0.1:{server.port}",
        shortened_rules(server.tmp),
        evaluation=_EVALUATION,
        credentials_file=token_file(server) if with_token else None,
    )


@contextlib.contextmanager
def watched_server(
    extra_env: dict[str, str] | None = None, *, with_token: bool = False
) -> Iterator[tuple[DaphneProcess, Prometheus]]:
    """A server of the test's own and its Prometheus, started first.

    The server's port is known before it starts, so Prometheus's first-target
    wait runs while the server starts up; its first scrapes, refused, change
    no alert (the scrape alert asks for a target that once served /metrics).
    """
    with contextlib.ExitStack() as stack:
        server = DaphneProcess(grpc=False, extra_env=extra_env)
        stack.callback(server.cleanup)
        prometheus = watching(server, with_token=with_token)
        stack.callback(prometheus.stop)
        prometheus.start()
        server.start()
        yield server, prometheus


async def enqueue_stuck(server: DaphneProcess, token: str) -> Any:
    ws = await ws_connect(f"{server.ws_url}/ws/frontend/", token)
    now = time.time()
    msg = {"type": "enqueue", "id": "stuck-1", "tenant": "stuck", "query": "up"}
    await ws.send(json.dumps(msg | {"start": now - 600, "end": now, "step": 15}))
    reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert reply["type"] == "enqueued", reply
    return ws


def scraped(prometheus: Prometheus, series: str) -> None:
    """Wait (30 s at most) until Prometheus holds `series`: a scrape went through."""
    deadline = time.monotonic() + 30
    while not prometheus.api(f"query?query={series}")["result"]:
        assert time.monotonic() < deadline, prometheus.log()
        time.sleep(0.2)


def firing(prometheus: Prometheus, alertname: str) -> list[dict[str, Any]]:
    """The alerts of that name firing now."""
    return [
        a
        for a in prometheus.api("alerts")["alerts"]
        if a["labels"]["alertname"] == alertname and a["state"] == "firing"
    ]


def wait_for(prometheus: Prometheus, alertname: str, *, fired: bool) -> list[dict[str, Any]]:
    """Poll until that alert fires (or, with `fired=False`, no longer does); what fires."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now = firing(prometheus, alertname)
        if bool(now) == fired:
            return now
        time.sleep(0.2)
    state = "fired" if fired else "cleared"
    now = prometheus.api("alerts")
    raise AssertionError(f"{alertname} never {state}: {now}\n{prometheus.log()}")


async def test_a_real_prometheus_sees_the_stuck_queue_alert_fire(
    deploy_server: DaphneProcess,
) -> None:
    server = deploy_server
    prometheus = watching(server)
    ws = None
    try:
        await asyncio.to_thread(prometheus.start)
        ws = await enqueue_stuck(server, server.issue_token("frontend", "stuck-frontend"))
        alerts = await asyncio.to_thread(
            wait_for, prometheus, "QueueInspectorSchedulerQueriesStuck", fired=True
        )
        assert float(alerts[0]["value"]) > 1.0
        targets = await asyncio.to_thread(prometheus.api, "targets")
        assert [t["health"] for t in targets["activeTargets"]] == ["up"]
    finally:
        if ws is not None:
            await ws.close()
        await asyncio.to_thread(prometheus.stop)


def test_a_real_prometheus_pages_for_a_replica_it_cannot_scrape_until_it_is_back() -> None:
    # A server of its own: it is stopped and started again.
    with watched_server() as (server, prometheus):
        scraped(prometheus, "queue_inspector_config_version")
        assert firing(prometheus, "QueueInspectorScrapeFailing") == []
        server.stop()
        (alert,) = wait_for(prometheus, "QueueInspectorScrapeFailing", fired=True)
        assert alert["labels"]["instance"] == f"127.0.0.1:{server.port}"
        assert alert["labels"]["severity"] == "critical"
        assert "/healthz" in alert["annotations"]["description"]
        server.start()
        wait_for(prometheus, "QueueInspectorScrapeFailing", fired=False)


def test_a_real_prometheus_pages_for_a_replica_whose_config_reconciles_fail_until_they_pass() -> (
    None
):
    # A server of its own: its database is broken and mended.
    with watched_server() as (server, prometheus):
        database = sqlite3.connect(server.tmp / "db.sqlite3", isolation_level=None)
        (table,) = database.execute(
            "SELECT name FROM sqlite_master WHERE name LIKE '%schedulersettings'"
        ).fetchone()
        try:
            stamp = "queue_inspector_config_last_reconcile_success_timestamp_seconds"
            scraped(prometheus, stamp)
            assert firing(prometheus, "QueueInspectorConfigStale") == []
            database.execute(f'ALTER TABLE "{table}" RENAME TO "{table}_away"')
            (alert,) = wait_for(prometheus, "QueueInspectorConfigStale", fired=True)
            assert alert["labels"]["instance"] == f"127.0.0.1:{server.port}"
            assert "config reconcile failed" in server.log()
            failures = prometheus.api("query?query=queue_inspector_config_reconcile_failures_total")
            assert float(failures["result"][0]["value"][1]) > 0
            database.execute(f'ALTER TABLE "{table}_away" RENAME TO "{table}"')
            wait_for(prometheus, "QueueInspectorConfigStale", fired=False)
        finally:
            database.close()


def test_a_real_prometheus_scrapes_a_locked_metrics_endpoint_with_a_viewer_token() -> None:
    # As an operator who set METRICS_REQUIRE_LOGIN would configure it, with
    # the token in a file (as from a secret) written once it is issued.
    locked = {"METRICS_REQUIRE_LOGIN": "1"}
    with watched_server(locked, with_token=True) as (server, prometheus):
        token_file(server).write_text(server.issue_token("viewer", "prometheus"))
        scraped(prometheus, "queue_inspector_config_version")
        # A scrape without the token is refused (tests/api/wire/test_metrics_access.py).
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{server.base_url}/metrics", timeout=5)
        assert refused.value.code == 401
