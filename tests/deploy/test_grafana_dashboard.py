"""deploy/grafana/queue-inspector.json: every query parses and names only exported metrics."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import promql_parser

from tests.deploy.prom import DEPLOY, SCRAPE_SERIES, exported_names, metric_names

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
        "queue_inspector_config_last_reconcile_success_timestamp_seconds",
        "queue_inspector_invalid_stored_configs",
        "up",
    ):
        assert metric in names


def test_every_dashboard_query_parses_and_names_only_exported_metrics(scrape: str) -> None:
    exported = exported_names(scrape)
    seen = 0
    for title, expr in expressions():
        missing = metric_names(grafana_expanded(expr)) - exported - SCRAPE_SERIES
        assert not missing, f"panel {title!r} queries metrics the server does not export: {missing}"
        seen += 1
    assert seen >= 15


def _by_labels(node: Any) -> list[str]:
    # topk and bottomk carry no modifier: they keep their argument's labels.
    return list(node.modifier.labels) if node.modifier is not None else []


def per_tenant(expr: str) -> bool:
    """Whether the query keeps a series per tenant (groups by `user`)."""

    def walk(node: Any) -> bool:
        if isinstance(node, promql_parser.AggregateExpr) and "user" in _by_labels(node):
            return True
        children = [getattr(node, a, None) for a in ("expr", "lhs", "rhs")]
        children += list(getattr(node, "args", None) or ())
        return any(walk(c) for c in children if c is not None and not isinstance(c, str))

    return walk(promql_parser.parse(expr))


def bounded(expr: str) -> bool:
    """Whether the query returns at most k series per step (topk or bottomk outermost)."""
    node = promql_parser.parse(expr)
    while isinstance(node, promql_parser.ParenExpr):
        node = node.expr
    return isinstance(node, promql_parser.AggregateExpr) and str(node.op) in ("topk", "bottomk")


def test_every_per_tenant_panel_shows_a_bounded_number_of_tenants() -> None:
    # 10,000 tenants are 10,000 series in a panel: the browser stalls just
    # when the operator opens the dashboard in an incident.
    tenant_panels = [(t, e) for t, e in expressions() if per_tenant(grafana_expanded(e))]
    assert len(tenant_panels) >= 5
    unbounded = [title for title, expr in tenant_panels if not bounded(grafana_expanded(expr))]
    assert not unbounded, f"per-tenant panels without topk: {unbounded}"


def test_a_per_tenant_query_without_topk_is_told_from_a_bounded_one() -> None:
    assert per_tenant("sum by (user) (rate(x[1m])) > 0")
    assert not bounded("sum by (user) (rate(x[1m])) > 0")
    assert bounded("(topk(10, sum by (user) (rate(x[1m])) > 0))")
    assert not per_tenant("sum by (instance) (x)")
