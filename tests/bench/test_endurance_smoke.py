"""`make endurance` inside the test suite, at its smoke size: QueueFlow through every phase (ramp, held horizon,
REPEATABLE READ readers, overload, PostgreSQL restarted, worker killed, connections cut), seconds each, on the run's
own cluster (autovacuum on), and the report and plots written.

It asserts nothing about speed (the machine is shared, and phases of a second or two are too short to judge); it
proves the harness runs end to end against the code as it is, so that the full profile does not rot between runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.endurance.phases import PLAN

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_endurance_harness_runs_every_phase_and_writes_its_report(tmp_path: Path) -> None:
    report = tmp_path / "endurance.md"
    run = subprocess.run(
        [sys.executable, "-m", "bench.endurance", "--profile", "smoke", "--output", str(report)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        # A hang guard, not a speed limit: under a minute on a quiet machine, about one on a loaded one.
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    text = report.read_text()
    assert "### QueueFlow at 150 jobs/s" in text, text
    missing = [plan.title for plan in PLAN if f"| {plan.title} |" not in text]
    assert not missing, text
    results = json.loads((tmp_path / "endurance" / "results.json").read_text())
    assert results["server"]["own_cluster"], results["server"]
    assert results["server"]["autovacuum"] == "on", results["server"]
    (queueflow,) = results["systems"]
    (run_150,) = queueflow["runs"]
    assert run_150["finished"] > 0
    assert [phase["name"] for phase in run_150["phases"]] == [plan.name for plan in PLAN]
    assert all(phase["storage"] for phase in run_150["phases"]), "pgstattuple read every phase's end"
    plots = sorted(path.name for path in (tmp_path / "endurance").glob("*.png"))
    assert plots == ["150-dead-tuples.png", "150-depth.png", "150-latency.png", "150-size.png"]
