"""Issue 42's hold figure alone: QueueFlow at one offered rate, clean, an idle-in-transaction hold, recovery — the
endurance run (`bench.endurance`) with its plan cut to those three phases, for an A/B of two revisions in minutes
rather than hours. `--fault readers` runs the four REPEATABLE READ scanners instead of the hold (clean, readers,
recovery), `--hold` seconds long.

Run from the repository root: `PYTHONPATH=. .venv/bin/python bench/results/endurance-hold-ab/driver.py [REPORT]
[--rate N] [--clean S] [--hold S] [--recovery S] [endurance options]`; the defaults (150 jobs/s, 120 s clean, a
240 s hold, 60 s of recovery) are the runs of 2026-12-07-endurance-hold-ab.md, and 2026-12-07-claim-plan-kept.md
ran `--clean 90 --hold 180` (and `--rate 1000` once). Options it does not know go to `bench.endurance`:
`--shared-server` runs on QUEUEFLOW_BENCH_DATABASE_URL's server, as every run before the harness had a cluster of
its own did. For another revision's code, put its worktree's `server/` and root first on PYTHONPATH (the server it
starts inherits it).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import bench.endurance.run as endurance_run
from bench.endurance import phases, profiles
from bench.endurance.__main__ import main

parser = argparse.ArgumentParser(prog="driver.py")
parser.add_argument("report", nargs="?", default="/tmp/endurance-hold-ab/report.md")
parser.add_argument("--rate", type=int, default=150, help="jobs/s offered")
parser.add_argument("--clean", type=int, default=120, help="seconds of the clean phase")
parser.add_argument("--hold", type=int, default=240, help="seconds of the hold")
parser.add_argument("--recovery", type=int, default=60, help="seconds of the recovery after it")
parser.add_argument("--fault", choices=("hold", "readers"), default="hold", help="the fault phase (default: hold)")
args, passed_on = parser.parse_known_args()

fault = next(i for i, plan in enumerate(phases.PLAN) if plan.name == args.fault)
endurance_run.PLAN = [phases.PLAN[0], *phases.PLAN[fault : fault + 2]]  # clean, the fault, the recovery after it
profiles.PROFILES["short"] = dataclasses.replace(
    profiles.SHORT,
    rates=(args.rate,),
    phase_seconds=args.clean,
    recovery_seconds=args.recovery,
    ramp_steps=1,
    ramp_step_seconds=10,
    peers=False,
    drain_seconds=40,
)
_seconds_of = phases.seconds_of
endurance_run.seconds_of = lambda plan, profile: args.hold if plan.name == args.fault else _seconds_of(plan, profile)

sys.argv = ["endurance", "--profile", "short", "--system", "queueflow", "--output", args.report, *passed_on]
raise SystemExit(main())
