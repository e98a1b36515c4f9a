"""`/metrics` text, byte for byte `generate_latest`'s, written with less work per series.

`prometheus_client.exposition.generate_latest` rebuilds every sample's
`name{label="value",...} ` on every scrape: it sorts the labels, checks each
name against a regular expression and escapes each value, and at 10,000
tenants it formats some 30,000 series. `write_latest` writes everything
exactly as the library does, through the library's own escaping and float
spelling (property tests compare the two on arbitrary registries), with
less per series:

- `RowFamily` is a metric family for the big per-tenant families: a row of
  label values and a number per sample, where the library's families
  build a `Sample` and a labels dict per sample. Its rows are written from
  one template per family (names sorted and checked once), so a row costs
  its values' escaping. `samples` still lists them, for `generate_latest`,
  `get_sample_value` and anything else that reads a family.
- Each sample prefix of the library's families is kept until the next
  scrape (only the series that scrape wrote).

Imports only `prometheus_client`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any
from weakref import WeakKeyDictionary

from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics import exposition as om
from prometheus_client.registry import CollectorRegistry
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

__all__ = ["RowFamily", "write_latest"]

# generate_latest's default: names outside the legacy character set get
# underscores. Label values are escaped, never underscored.
_ESCAPING = om.UNDERSCORES
# Samples generate_latest moves out of their family into a gauge of their own.
_SPLIT_SUFFIXES = ("_created", "_gsum", "_gcount")
# The Prometheus text format's names for the OpenMetrics types.
_TEXT_TYPES = {"stateset": "gauge", "gaugehistogram": "histogram", "unknown": "untyped"}
_NAME_SUFFIXES = {"counter": "_total", "info": "_info"}


class RowFamily(Metric):
    """A family whose samples share one name and one list of label names.

    `add_metric(values, value)` keeps a row: no `Sample`, no dict. Named as
    the library's `GaugeMetricFamily` and `CounterMetricFamily` name theirs:
    a counter's `_total` is taken off the family's name and put on each
    sample's.
    """

    def __init__(self, name: str, documentation: str, typ: str, labels: Sequence[str] = ()) -> None:
        if typ == "counter" and name.endswith("_total"):
            name = name.removesuffix("_total")
        super().__init__(name, documentation, typ)
        self.label_names = tuple(labels)
        self.sample_name = self.name + ("_total" if self.type == "counter" else "")
        self.rows: list[tuple[tuple[str, ...], float]] = []

    def add_metric(self, values: Sequence[str], value: float) -> None:
        if len(values) != len(self.label_names):
            raise ValueError(f"{self.name}: {len(self.label_names)} label values expected")
        self.rows.append((tuple(values), value))

    @property  # type: ignore[override]
    def samples(self) -> list[Sample]:
        names, name = self.label_names, self.sample_name
        return [
            Sample(name, dict(zip(names, values, strict=True)), value)
            for values, value in self.rows
        ]

    @samples.setter
    def samples(self, value: list[Sample]) -> None:
        # Metric.__init__ starts every family with an empty list; rows are added with add_metric().
        if value:
            raise TypeError("a RowFamily keeps rows: add them with add_metric()")


def _row_template(name: str, names: tuple[str, ...]) -> tuple[str, tuple[int, ...]]:
    """A `str.format` template of a series' prefix, and the order its values fill it.

    As generate_latest writes it: labels sorted by name, names escaped (once
    here, for a whole family of rows). An escaped name holds no brace, so
    the template has no field but the values' own.
    """
    order = tuple(sorted(range(len(names)), key=names.__getitem__))
    labels = ",".join(f'{om.escape_label_name(names[i], _ESCAPING)}="{{}}"' for i in order)
    name = om.escape_metric_name(name, _ESCAPING)
    return (f"{name}{{{{{labels}}}}} " if labels else f"{name} "), order


def _fill(template: str, order: tuple[int, ...], values: Sequence[str]) -> str:
    """The prefix of one series: its label values escaped into the template."""
    return template.format(*[om._escape(values[i], om.ALLOWUTF8, False) for i in order])


def _prefix(sample: Sample) -> str:
    template, order = _row_template(sample.name, tuple(sample.labels))
    return _fill(template, order, tuple(sample.labels.values()))


def _timestamp(sample: Sample) -> str:
    # In milliseconds, as generate_latest writes it.
    return "" if sample.timestamp is None else f" {int(float(sample.timestamp) * 1000):d}"


def _header(name: str, documentation: str, typ: str) -> str:
    name = om.escape_metric_name(name, _ESCAPING)
    doc = documentation.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name} {doc}\n# TYPE {name} {typ}\n"


class _Writer:
    def __init__(self) -> None:
        # The last scrape's sample prefixes, of the library's families only:
        # a key is the sample's name and (label, value) pairs, a new tuple
        # per series that lives until the next scrape. Kept for the tens of
        # thousands of rows, those tuples made the collector's passes longer,
        # in the worker thread and on the loop, and a scrape held dispatch
        # longer than the library's whole formatting did
        # (`tests.load.scrape_bench --two-priorities`). Rows are written from
        # their family's template instead.
        self._last: dict[tuple[Any, ...], str] = {}

    def write(self, registry: CollectorRegistry) -> bytes:
        # Two scrapes at once each read the last scrape's prefixes and leave
        # their own; either set is right, since a prefix depends only on its key.
        last: dict[tuple[Any, ...], str] = self._last
        kept: dict[tuple[Any, ...], str] = {}
        out: list[str] = []
        for metric in registry.collect():
            try:
                split = self._family(metric, last, kept, out)
            except Exception as exc:
                exc.args = (exc.args or ("",)) + (metric,)
                raise
            for suffix, lines in sorted(split.items()):
                out.append(_header(metric.name + suffix, metric.documentation, "gauge"))
                out.extend(lines)
        self._last = kept
        return "".join(out).encode("utf-8")

    def _family(
        self,
        metric: Metric,
        last: dict[tuple[Any, ...], str],
        kept: dict[tuple[Any, ...], str],
        out: list[str],
    ) -> dict[str, list[str]]:
        typ = metric.type
        out.append(
            _header(
                metric.name + _NAME_SUFFIXES.get(typ, ""),
                metric.documentation,
                "gauge" if typ == "info" else _TEXT_TYPES.get(typ, typ),
            )
        )
        if isinstance(metric, RowFamily):
            self._rows(metric, out)
            return {}
        split: dict[str, list[str]] = {}
        moved = {metric.name + suffix: suffix for suffix in _SPLIT_SUFFIXES}
        for sample in metric.samples:
            key = (sample.name, *sample.labels.items())
            prefix = last.get(key)
            if prefix is None:
                prefix = _prefix(sample)
            kept[key] = prefix
            line = f"{prefix}{floatToGoString(sample.value)}{_timestamp(sample)}\n"
            suffix = moved.get(sample.name)
            if suffix is None:
                out.append(line)
            else:
                split.setdefault(suffix, []).append(line)
        return split

    @staticmethod
    def _rows(family: RowFamily, out: list[str]) -> None:
        template, order = _row_template(family.sample_name, family.label_names)
        for values, value in family.rows:
            # `rows` may be set whole (TallyCounter); str.format would drop extra values.
            if len(values) != len(order):
                raise ValueError(f"{family.name}: {len(order)} label values expected")
            out.append(f"{_fill(template, order, values)}{floatToGoString(value)}\n")


_WRITERS: WeakKeyDictionary[CollectorRegistry, _Writer] = WeakKeyDictionary()
_WRITERS_LOCK = threading.Lock()


def write_latest(registry: CollectorRegistry) -> bytes:
    """`generate_latest(registry)`, reusing its last call's prefixes of library families."""
    with _WRITERS_LOCK:
        writer = _WRITERS.get(registry)
        if writer is None:
            writer = _WRITERS[registry] = _Writer()
    return writer.write(registry)
