"""The worker drains' memory rows: the long drain's peak RSS against its own target where issue 46 set one, and the
TypeScript worker's live heap after a full GC beside it."""

from __future__ import annotations

import pytest

from bench import figures
from bench.machine import Machine
from bench.report import Results
from bench.scenarios.worker_drains import DrainRun, WorkerDrain


def drain(kind: str, jobs: int, peak_mb: float, live_heap: int | None = None) -> DrainRun:
    return DrainRun(kind, None, jobs, 1.0, 0.1, 0.1, int(peak_mb * figures.MB), "0 0 0", live_heap=live_heap)


def test_the_long_drains_rss_has_issue_46s_target_for_typescript_and_its_live_heap_a_row_of_its_own() -> None:
    run = Results("test", Machine("now", 2, 1.0, "cpu", "0 0 0", "PostgreSQL 15", "abc"))
    drains = {WorkerDrain(kind): [drain(kind, 20_000, 70)] for kind in ("Python SDK", "TypeScript SDK")}
    long_drains = [
        drain("Python SDK", 200_000, 55),
        drain("TypeScript SDK", 200_000, 114, live_heap=6_400_000),
    ]
    figures.workers(run, drains, long_drains, {})
    by_label = {figure.label: figure for figure in run.figures}

    typescript = by_label["TypeScript SDK worker peak RSS, one 200,000-job drain (÷ the shorter drains')"]
    assert (typescript.value, str(typescript.target), typescript.met) == (pytest.approx(114), "value ≤ 128", True)
    python = by_label["Python SDK worker peak RSS, one 200,000-job drain (÷ the shorter drains')"]
    assert str(python.target) == "value ≤ 60"
    # The 20,000-job drains keep issue 13's target.
    assert str(by_label["TypeScript SDK worker peak RSS, 20,000-job drains"].target) == "value ≤ 100"

    heap = by_label["TypeScript SDK worker live heap after a full GC, one 200,000-job drain"]
    assert (heap.value, heap.unit, str(heap.target), heap.met) == (pytest.approx(6.4), "MB", "value ≤ 16", True)
    assert [label for label in by_label if "live heap" in label] == [heap.label]
    assert (
        "TypeScript SDK worker, 200,000-job drain: 200,000 jobs/s, peak RSS 114 MB, live heap after a full GC 6.4 MB,"
        in "\n".join(run.details)
    )
