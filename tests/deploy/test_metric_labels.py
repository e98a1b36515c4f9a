"""The alerts and the dashboard read only labels the server's series carry.

A metric name that exists with a label that does not (`by (tenant)` where the
series say `user`, a matcher on `querier_id`) parses, passes promtool and
returns nothing, so the alert never fires and the panel stays empty. Here
every family is fed once through the running scheduler, the real `/metrics`
is read, and each label a rule or panel groups by, matches on, filters on or
writes into its text must be on the series it reads (or be a target label
Prometheus adds). The same scrape must pass `promtool check metrics`
(Prometheus's naming conventions: counters end in `_total`, units in names).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import promql_parser
import pytest
from django.test import AsyncClient
from prometheus_client.parser import text_string_to_metric_families

from api.wire import metrics  # noqa: F401 - importing registers the observer
from scheduler_core.errors import TooManyRequests
from scheduler_core.model import PriorityDef, QueryPriority, Request, TenantLimits
from tests.deploy.prom import metric_names, tool
from tests.deploy.test_grafana_dashboard import DASHBOARD, expressions, grafana_expanded, panels
from tests.deploy.test_prometheus_rules import alerts

pytestmark = pytest.mark.django_db(transaction=True)

# Labels Prometheus puts on every scraped series.
TARGET_LABELS = frozenset({"job", "instance"})
_TEMPLATE_LABEL = re.compile(r"\$labels\.(\w+)")
_LEGEND_LABEL = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def series_labels(exposition: str) -> dict[str, set[str]]:
    """Each series name in the exposition and the label names its samples carry."""
    out: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            out.setdefault(sample.name, set()).update(sample.labels)
    return out


def _children(node: Any) -> Iterator[Any]:
    for attr in ("expr", "lhs", "rhs", "vector_selector"):
        child = getattr(node, attr, None)
        if child is not None and not isinstance(child, str | int | float):
            yield child
    yield from getattr(node, "args", None) or ()


def _selectors(node: Any) -> Iterator[Any]:
    if isinstance(node, promql_parser.VectorSelector):
        yield node
    for child in _children(node):
        yield from _selectors(child)


def label_uses(expr: str) -> Iterator[tuple[str, set[str]]]:
    """(label, metric names it must come from) for each label the expression reads."""

    def walk(node: Any) -> Iterator[tuple[str, set[str]]]:
        names = {s.name for s in _selectors(node) if s.name}
        if isinstance(node, promql_parser.VectorSelector):
            for matcher in node.matchers.matchers:
                if matcher.name != "__name__":
                    yield matcher.name, {node.name}
        elif isinstance(node, promql_parser.AggregateExpr) and node.modifier is not None:
            yield from ((label, names) for label in node.modifier.labels)
        elif isinstance(node, promql_parser.BinaryExpr) and node.modifier is not None:
            modifier = node.modifier
            used = list(modifier.matching.labels if modifier.matching else ())
            used += list(modifier.group_labels or ())
            yield from ((label, names) for label in used)
        for child in _children(node):
            yield from walk(child)

    yield from walk(promql_parser.parse(expr))


def missing_labels(expr: str, exported: dict[str, set[str]], texts: list[str]) -> set[str]:
    """Labels `expr` (or the text written from its result) reads that its series lack."""
    missing = set()
    for label, names in label_uses(expr):
        if label not in TARGET_LABELS and not any(label in exported.get(n, ()) for n in names):
            missing.add(f"{label} (on {', '.join(sorted(names))})")
    carried = set().union(*(exported.get(n, set()) for n in metric_names(expr)), TARGET_LABELS)
    for text in texts:
        for label in _TEMPLATE_LABEL.findall(text) + _LEGEND_LABEL.findall(text):
            if label not in carried:
                missing.add(f"{label} (in {text!r})")
    return missing


def feed_every_family(runtime: Any) -> None:
    """One event of each kind, so each labelled family has a sample to read labels from."""
    reserved = PriorityDef(priority=5, reserved_queriers=1, query_attributes=[])
    runtime.set_tenant_limits(
        "lbl-a",
        TenantLimits(
            max_outstanding=2,
            query_priority=QueryPriority(enabled=True, priorities=[reserved]),
        ),
    )
    runtime.connect_querier("lbl-q1")  # reserved for lbl-a's priority 5, idle
    runtime.enqueue(Request(id="lbl-1", tenant_id="lbl-a", component="ingester"))
    runtime.enqueue(Request(id="lbl-2", tenant_id="lbl-a", component="ingester"))
    with pytest.raises(TooManyRequests):
        runtime.enqueue(Request(id="lbl-3", tenant_id="lbl-a"))
    runtime.cancel("lbl-2")
    runtime.enqueue(Request(id="lbl-6", tenant_id="lbl-b"))
    runtime.fail("lbl-6", "cancelled by an operator")


async def fed_exposition(host: Any) -> str:
    runtime = host.runtime
    feed_every_family(runtime)
    worker = runtime.connect_querier("lbl-q2")
    ran = await runtime.next_request("lbl-q2", worker)
    runtime.enqueue(Request(id="lbl-4", tenant_id="lbl-a", component="ingester"))
    runtime.complete(ran.id)
    busy = await runtime.next_request("lbl-q2", worker)
    assert busy.id == "lbl-4"
    runtime.enqueue(Request(id="lbl-5", tenant_id="lbl-b"))  # left queued
    response = await AsyncClient().get("/metrics")
    assert response.status_code == 200
    return response.content.decode()


async def fed_scrape(host: Any) -> dict[str, set[str]]:
    return series_labels(await fed_exposition(host))


async def test_every_series_passes_promtool_check_metrics(host: Any) -> None:
    exposition = await fed_exposition(host)
    result = subprocess.run(
        [tool("promtool"), "check", "metrics"],
        input=exposition,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and not result.stdout + result.stderr, result.stderr


async def test_every_label_the_alerts_read_is_on_the_series_they_read(host: Any) -> None:
    exported = await fed_scrape(host)
    for rule in alerts():
        texts = [*rule.get("annotations", {}).values(), *rule.get("labels", {}).values()]
        missing = missing_labels(rule["expr"], exported, texts)
        assert not missing, f"{rule['alert']} reads labels its series lack: {missing}"


async def test_every_label_the_dashboard_reads_is_on_the_series_it_reads(host: Any) -> None:
    exported = await fed_scrape(host)
    doc = json.loads(DASHBOARD.read_text())
    texts: dict[str, list[str]] = {}
    for panel in panels(doc["panels"]):
        for target in panel.get("targets", []):
            texts.setdefault(target["expr"], []).append(target.get("legendFormat", ""))
    for note in doc["annotations"]["list"]:
        texts.setdefault(note["expr"], []).extend([note["titleFormat"], note["textFormat"]])
    for title, expr in expressions():
        missing = missing_labels(grafana_expanded(expr), exported, texts.get(expr, []))
        assert not missing, f"panel {title!r} reads labels its series lack: {missing}"


def test_a_label_the_series_do_not_carry_is_caught() -> None:
    exported = {"cortex_request_queue_requests_total": {"user", "priority"}}
    good = "sum by (job, user) (rate(cortex_request_queue_requests_total[5m]))"
    assert missing_labels(good, exported, ["{{ $labels.user }}", "{{user}}"]) == set()
    typo = 'sum by (tenant) (rate(cortex_request_queue_requests_total{prio="1"}[5m]))'
    assert missing_labels(typo, exported, ["{{ $labels.querier }}"]) == {
        "tenant (on cortex_request_queue_requests_total)",
        "prio (on cortex_request_queue_requests_total)",
        "querier (in '{{ $labels.querier }}')",
    }
