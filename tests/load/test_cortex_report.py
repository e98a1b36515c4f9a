"""cortex_bench's /proc reads and its report, without Cortex: memory beside CPU."""

from __future__ import annotations

import os

import pytest

from tests.load.bench_processes import group_memory_bytes
from tests.load.cortex_report import MB, PhaseResult, WrkResult, phase_line, report


def _phase(kind: str, rss_mb: int, peak_mb: int) -> PhaseResult:
    load = WrkResult(1000, 10.0, 5.0, 9.0, 0, 0)
    light = WrkResult(100, 10.0, 1.0, 2.0, 0, 0)
    return PhaseResult(
        kind, load, light, 0.1, 0.5, scheduler_rss=rss_mb * MB, scheduler_peak=peak_mb * MB
    )


def test_a_process_group_s_memory_is_its_members_resident_set_and_peaks() -> None:
    rss, peak = group_memory_bytes(os.getpgid(0))  # this test's own group
    assert 1 * MB < rss <= peak


def test_a_group_with_no_live_process_has_no_memory() -> None:
    assert group_memory_bytes(2**22 + 12345) == (0, 0)


def test_the_report_prints_memory_beside_cpu_with_the_ratio(
    capsys: pytest.CaptureFixture[str],
) -> None:
    results = [_phase("cortex", 40, 50), _phase("ours", 120, 150)]
    assert "scheduler memory 120 MB (peak 150 MB)" in phase_line(2, results[1])
    report(results, ["ours"], rounds=1, replicas=1)
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("scheduler memory MB"))
    assert row.split()[-3:] == ["40", "120", "3.00"]
    peak = next(line for line in out.splitlines() if line.startswith("scheduler peak memory"))
    assert peak.split()[-3:] == ["50", "150", "3.00"]
