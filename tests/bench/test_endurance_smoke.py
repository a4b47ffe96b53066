"""`make endurance` inside the test suite, at its smoke size: QueueFlow through every phase (ramp, held horizon,
REPEATABLE READ readers, overload, PostgreSQL restarted, worker killed, connections cut), seconds each, on the run's
own cluster (autovacuum on), its part stored, and the report and plots written; then the report built again from
that part and a second one, as another run of another revision at another rate would have stored it, refused
with a part of another profile beside them, and built again once that part is gone.

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


def _endurance(report: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench.endurance", "--profile", "smoke", "--output", str(report), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        # A hang guard, not a speed limit: under a minute on a quiet machine, about one on a loaded one.
        timeout=300,
        check=False,
    )


def test_the_endurance_harness_runs_every_phase_and_writes_its_report(tmp_path: Path) -> None:
    report, folder = tmp_path / "endurance.md", tmp_path / "endurance"
    run = _endurance(report, "--system", "queueflow", "--rate", "150")  # the smoke profile's all, named as a part's
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    text = report.read_text()
    assert "### QueueFlow at 150 jobs/s" in text, text
    missing = [plan.title for plan in PLAN if f"| {plan.title} |" not in text]
    assert not missing, text
    assert "Every system at every rate of the smoke profile has its part." in text
    results = json.loads((folder / "results.json").read_text())
    (part,) = results["parts"]
    stored = folder / "parts" / "queueflow-150.json"
    assert json.loads(stored.read_text()) == part
    assert part["profile"]["name"] == "smoke"
    assert len(part["revision"]) == 12, part["revision"]
    assert part["server"]["own_cluster"], part["server"]
    assert part["server"]["autovacuum"] == "on", part["server"]
    assert part["machine"]["postgres_version"].startswith("PostgreSQL 15"), part["machine"]
    (run_150,) = part["system"]["runs"]
    assert run_150["finished"] > 0
    assert [phase["name"] for phase in run_150["phases"]] == [plan.name for plan in PLAN]
    assert all(phase["storage"] for phase in run_150["phases"]), "pgstattuple read every phase's end"
    plots = sorted(path.name for path in folder.glob("*.png"))
    assert plots == ["150-dead-tuples.png", "150-depth.png", "150-latency.png", "150-size.png"]

    other = json.loads(stored.read_text())
    other["revision"], other["dirty"], other["system"]["runs"][0]["rate"] = "000000000000", False, 300
    (folder / "parts" / "queueflow-300.json").write_text(json.dumps(other))
    rebuilt = _endurance(report, "--report-only")
    assert rebuilt.returncode == 0, rebuilt.stdout[-4000:] + rebuilt.stderr[-4000:]
    text = report.read_text()
    assert "### QueueFlow at 150 jobs/s" in text, text
    assert "### QueueFlow at 300 jobs/s" in text, text
    assert "| `queueflow-300.json` | QueueFlow | 300 | " in text, text
    assert "**The parts come from 2 revisions**" in text, text
    results = json.loads((folder / "results.json").read_text())
    assert [(part["system"]["system"], part["revision"]) for part in results["parts"]] == [
        ("QueueFlow", part["revision"]),
        ("QueueFlow", "000000000000"),
    ]
    assert len(list(folder.glob("300-*.png"))) == 4

    other["profile"]["name"] = "short"
    (folder / "parts" / "queueflow-300.json").write_text(json.dumps(other))
    refused = _endurance(report, "--report-only")
    assert refused.returncode == 2, refused.stdout[-4000:] + refused.stderr[-4000:]
    assert "queueflow-300.json: measured with the short profile" in refused.stderr, refused.stderr
    assert report.read_text() == text, "a report of parts that may not be combined is not written"

    (folder / "parts" / "queueflow-300.json").unlink()
    again = _endurance(report, "--report-only")
    assert again.returncode == 0, again.stdout[-4000:] + again.stderr[-4000:]
    assert "300 jobs/s" not in report.read_text()
    assert sorted(path.name for path in folder.glob("*.png")) == plots, "a rate without a part has no plots"
