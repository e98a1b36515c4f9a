"""deploy/grafana/queue-inspector.json: every query parses and names only exported metrics."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tests.deploy.prom import DEPLOY, exported_names, metric_names

DASHBOARD = DEPLOY / "grafana" / "queue-inspector.json"
# Grafana's own variables become what Grafana would put there before PromQL sees them.
_GRAFANA_VARS = {"$__rate_interval": "1m", "$__interval": "30s", "$__range": "1h"}


def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in items:
        yield panel
        yield from panels(panel.get("panels", []))


def expressions() -> list[tuple[str, str]]:
    doc = json.loads(DASHBOARD.read_text())
    out = [
        (panel["title"], target["expr"])
        for panel in panels(doc["panels"])
        for target in panel.get("targets", [])
    ]
    out += [(f"annotation {a['name']}", a["expr"]) for a in doc["annotations"]["list"]]
    for var in doc["templating"]["list"]:
        if var["type"] == "query":
            # label_values(METRIC, label): the metric must exist too.
            match = re.fullmatch(r"label_values\((\w+), *\w+\)", var["query"]["query"])
            assert match, var
            out.append((f"variable {var['name']}", match.group(1)))
    return out


def grafana_expanded(expr: str) -> str:
    for var, value in _GRAFANA_VARS.items():
        expr = expr.replace(var, value)
    return expr.replace("$job", ".+")


def test_the_dashboard_has_a_panel_for_each_signal_the_alerts_use() -> None:
    names = set().union(*(metric_names(grafana_expanded(e)) for _, e in expressions()))
    for metric in (
        "cortex_query_scheduler_queue_max_wait_seconds",
        "cortex_query_scheduler_max_queue_length",
        "cortex_query_scheduler_discarded_requests_total",
        "queue_inspector_reserved_querier_idle_seconds",
        "queue_inspector_replica_up",
        "queue_inspector_querier_seconds_total",
        "queue_inspector_config_version",
    ):
        assert metric in names


def test_every_dashboard_query_parses_and_names_only_exported_metrics(scrape: str) -> None:
    exported = exported_names(scrape)
    seen = 0
    for title, expr in expressions():
        missing = metric_names(grafana_expanded(expr)) - exported
        assert not missing, f"panel {title!r} queries metrics the server does not export: {missing}"
        seen += 1
    assert seen >= 15
