"""deploy/prometheus/alerts.yaml: promtool's checks and unit tests, and a real Prometheus.

The last test starts a server with one request stuck in its queue (no
querier), points a real Prometheus at its /metrics with a copy of the rules
whose thresholds and `for:` are shortened, and waits for the stuck-queue
alert to fire, as an operator's Prometheus would see it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from loadgen.daphne_process import DaphneProcess
from loadgen.wsclients import ws_connect
from tests.deploy.prom import DEPLOY, Prometheus, exported_names, metric_names, tool

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
        missing = metric_names(rule["expr"]) - exported
        assert not missing, f"{rule['alert']} uses metrics the server does not export: {missing}"


def shortened_rules(directory: Path) -> Path:
    """The rules with the stuck threshold at 1 s and every `for:` at 2 s."""
    doc = yaml.safe_load(RULES.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            rule["for"] = "2s"
            rule["expr"] = rule["expr"].replace(
                "(cortex_query_scheduler_queue_max_wait_seconds) > 60",
                "(cortex_query_scheduler_queue_max_wait_seconds) > 1",
            )
    path = directory / "alerts-fast.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


async def enqueue_stuck(server: DaphneProcess, token: str) -> Any:
    ws = await ws_connect(f"{server.ws_url}/ws/frontend/", token)
    now = time.time()
    msg = {"type": "enqueue", "id": "stuck-1", "tenant": "stuck", "query": "up"}
    await ws.send(json.dumps(msg | {"start": now - 600, "end": now, "step": 15}))
    reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert reply["type"] == "enqueued", reply
    return ws


async def test_a_real_prometheus_sees_the_stuck_queue_alert_fire(
    deploy_server: DaphneProcess,
) -> None:
    server = deploy_server
    ws = await enqueue_stuck(server, server.issue_token("frontend", "stuck-frontend"))
    prometheus = Prometheus(f"127.0.0.1:{server.port}", shortened_rules(Path(server.tmp)))
    try:
        await asyncio.to_thread(prometheus.start)
        deadline = time.monotonic() + 60
        states: list[Any] = []
        while time.monotonic() < deadline:
            data = await asyncio.to_thread(prometheus.api, "alerts")
            states = [(a["labels"]["alertname"], a["state"], a["value"]) for a in data["alerts"]]
            if ("QueueInspectorSchedulerQueriesStuck", "firing") in [s[:2] for s in states]:
                break
            await asyncio.sleep(0.5)
        else:
            raise AssertionError(f"no stuck-queue alert fired: {states}\n{prometheus.log()}")
        firing = next(s for s in states if s[0] == "QueueInspectorSchedulerQueriesStuck")
        assert float(firing[2]) > 1.0
        targets = await asyncio.to_thread(prometheus.api, "targets")
        assert [t["health"] for t in targets["activeTargets"]] == ["up"]
    finally:
        await ws.close()
        await asyncio.to_thread(prometheus.stop)
