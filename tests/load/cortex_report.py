"""What `cortex_bench` measured, and how it prints it: per phase, totals, ratios.

A phase's wrk results (saturating and light) and the CPU seconds of the
scheduler's and the all-in-one Cortex's processes; totals per kind of
scheduler over the rounds, printed beside Cortex's with the ratio
ours/Cortex, since only figures from the same run compare on a shared
machine.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

__all__ = ["PhaseResult", "Totals", "WrkResult", "label", "phase_line", "report", "totals"]

MB = 1024 * 1024


@dataclass
class WrkResult:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    non_2xx: int
    socket_errors: int

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


@dataclass
class PhaseResult:
    kind: str  # "cortex", or a label of ours ("ours", or a --variant's)
    load: WrkResult
    light: WrkResult
    scheduler_cpu: float
    cortex_cpu: float
    per_replica: list[int] = field(default_factory=list)  # requests each replica dispatched
    # CPU per dispatched query as the scheduler's own /metrics reports it
    # (process_cpu_seconds_total over the queue-duration count).
    reported_us: float = float("nan")
    # The scheduler's resident memory right after the saturating window,
    # and its processes' peaks, in bytes (summed over replicas).
    scheduler_rss: int = 0
    scheduler_peak: int = 0

    def cpu_us(self, seconds: float) -> float:
        return seconds / self.load.requests * 1e6 if self.load.requests else float("nan")


def phase_line(index: int, r: PhaseResult) -> str:
    return (
        f"phase {index} {label(r.kind):<6}: {r.load.requests} queries in {r.load.seconds:.1f}s = "
        f"{r.load.rate:,.0f} q/s; p50 {r.load.p50_ms:.2f} ms, p99 {r.load.p99_ms:.2f} ms; "
        f"errors: non-2xx {r.load.non_2xx}, socket {r.load.socket_errors}; CPU/query: scheduler "
        f"{r.cpu_us(r.scheduler_cpu):.0f} us (its /metrics: {r.reported_us:.0f} us per dispatch), "
        f"all-in-one {r.cpu_us(r.cortex_cpu):.0f} us; scheduler memory "
        f"{r.scheduler_rss / MB:.0f} MB (peak {r.scheduler_peak / MB:.0f} MB); "
        f"light p50 {r.light.p50_ms:.2f} ms, p99 {r.light.p99_ms:.2f} ms"
        + (
            f"; dispatched per replica {', '.join(map(str, r.per_replica))}"
            if r.per_replica
            else ""
        )
    )


@dataclass
class Totals:
    rate: float
    p50: float
    p99: float
    errors: int
    non_2xx: int
    socket: int
    sched_us: float
    cortex_us: float
    light_p50: float
    light_p99: float
    light_rate: float
    rss_mb: float
    peak_mb: float


def totals(results: list[PhaseResult]) -> Totals:
    queries = sum(r.load.requests for r in results)
    per_query = 1e6 / queries if queries else float("nan")
    return Totals(
        rate=queries / sum(r.load.seconds for r in results),
        p50=statistics.mean(r.load.p50_ms for r in results),
        p99=statistics.mean(r.load.p99_ms for r in results),
        errors=sum(r.load.non_2xx + r.load.socket_errors for r in results),
        non_2xx=sum(r.load.non_2xx for r in results),
        socket=sum(r.load.socket_errors for r in results),
        sched_us=sum(r.scheduler_cpu for r in results) * per_query,
        cortex_us=sum(r.cortex_cpu for r in results) * per_query,
        light_p50=statistics.mean(r.light.p50_ms for r in results),
        light_p99=statistics.mean(r.light.p99_ms for r in results),
        light_rate=sum(r.light.requests for r in results) / sum(r.light.seconds for r in results),
        rss_mb=statistics.mean(r.scheduler_rss for r in results) / MB,
        peak_mb=max(r.scheduler_peak for r in results) / MB,
    )


def label(kind: str) -> str:
    return "Cortex" if kind == "cortex" else kind


def report(results: list[PhaseResult], kinds: list[str], rounds: int, replicas: int) -> None:
    """The totals of each kind of ours (`kinds`) against Cortex's, with per-round ratios."""
    theirs = totals([r for r in results if r.kind == "cortex"])
    for kind in kinds:
        report_one(results, kind, theirs, rounds, replicas)


def report_one(
    results: list[PhaseResult], kind: str, theirs: Totals, rounds: int, replicas: int
) -> None:
    ours = totals([r for r in results if r.kind == kind])
    rows = [
        ("queries/s (saturating)", theirs.rate, ours.rate, "{:,.0f}"),
        ("p50 latency ms", theirs.p50, ours.p50, "{:.2f}"),
        ("p99 latency ms", theirs.p99, ours.p99, "{:.2f}"),
        ("scheduler CPU us/query", theirs.sched_us, ours.sched_us, "{:.0f}"),
        ("all-in-one CPU us/query", theirs.cortex_us, ours.cortex_us, "{:.0f}"),
        ("light load p50 ms", theirs.light_p50, ours.light_p50, "{:.2f}"),
        ("light load p99 ms", theirs.light_p99, ours.light_p99, "{:.2f}"),
        ("light load queries/s", theirs.light_rate, ours.light_rate, "{:,.0f}"),
        ("scheduler memory MB", theirs.rss_mb, ours.rss_mb, "{:.0f}"),
        ("scheduler peak memory MB", theirs.peak_mb, ours.peak_mb, "{:.0f}"),
    ]
    name = label(kind)
    print()
    title = f"totals over {rounds} rounds"
    print(f"{title:<26}{'Cortex':>12}{name:>12}{name + '/Cortex':>16}")
    for row, a, b, fmt in rows:
        ratio = b / a if a else float("nan")
        print(f"{row:<26}{fmt.format(a):>12}{fmt.format(b):>12}{ratio:>16.2f}")
    for who, t in (("Cortex", theirs), (name, ours)):
        print(f"errors {who}: {t.errors} (non-2xx {t.non_2xx}, socket {t.socket})")
    print(
        "latency percentiles are wrk's, averaged over the rounds; rates and CPU are "
        "totals over the rounds; CPU is utime+stime from /proc over the saturating window; "
        "memory is VmRSS right after it (mean over the rounds) and the largest VmHWM"
        + (f", summed over {replicas} replicas" if replicas > 1 else "")
    )
    pairs = zip(
        [r for r in results if r.kind == "cortex"],
        [r for r in results if r.kind == kind],
        strict=False,
    )
    for i, (c, o) in enumerate(pairs, 1):
        print(
            f"round {i} {name}/Cortex: queries/s {o.load.rate / c.load.rate:.2f}, "
            f"p99 {o.load.p99_ms / c.load.p99_ms:.2f}, scheduler CPU/query "
            f"{o.cpu_us(o.scheduler_cpu) / c.cpu_us(c.scheduler_cpu):.2f}"
        )
