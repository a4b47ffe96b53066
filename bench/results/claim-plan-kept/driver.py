"""The runs of bench/results/2026-12-07-claim-plan-kept.md: issue 42's hold figure alone (QueueFlow, 150 jobs/s
offered), clean 90 s, an idle-in-transaction hold of 180 s, 60 s of recovery — the endurance run (`bench.endurance`)
with its plan cut to those three phases (bench/results/endurance-hold-ab/driver.py with shorter phases).

Run from the repository root: `PYTHONPATH=. .venv/bin/python bench/results/claim-plan-kept/driver.py [REPORT]`;
for another revision's code, put its worktree's `server/` and root first on PYTHONPATH (the server it starts
inherits it).
"""

from __future__ import annotations

import dataclasses
import sys

import bench.endurance.run as endurance_run
from bench.endurance import phases, profiles
from bench.endurance.__main__ import main

HOLD_SECONDS = 180

endurance_run.PLAN = phases.PLAN[:3]  # clean, hold, after-hold
profiles.PROFILES["short"] = dataclasses.replace(
    profiles.SHORT,
    rates=(150,),
    phase_seconds=90,
    recovery_seconds=60,
    ramp_steps=1,
    ramp_step_seconds=10,
    peers=False,
    drain_seconds=40,
)
_seconds_of = phases.seconds_of
endurance_run.seconds_of = lambda plan, profile: HOLD_SECONDS if plan.name == "hold" else _seconds_of(plan, profile)

report = sys.argv[1] if len(sys.argv) > 1 else "/tmp/endurance-hold-ab/report.md"
sys.argv = ["endurance", "--profile", "short", "--system", "queueflow", "--output", report]
raise SystemExit(main())
