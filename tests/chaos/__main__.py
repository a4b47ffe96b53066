"""`python -m tests.chaos [--short] [--scenario NAME ...] [--doc docs/reliability.md]`: run the chaos scenarios,
print the report, exit 1 if any invariant broke. `make chaos` runs the full profile of every scenario."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from tests.chaos import probes, scenario
from tests.chaos.report import table


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos")
    parser.add_argument("--short", action="store_true", help="the short profile (what `make test` runs)")
    parser.add_argument("--scenario", action="append", choices=sorted(scenario.FAULTS), help="default: all")
    parser.add_argument("--doc", type=Path, help="also write the report into this Markdown file")
    parser.add_argument("--jobs", type=int, help="jobs per scenario (default: the profile's)")
    args = parser.parse_args()
    profile = scenario.SHORT if args.short else scenario.FULL

    def sized(name: str) -> scenario.Profile:
        chosen = scenario.SOAK if name == "soak" and not args.short else profile
        return dataclasses.replace(chosen, jobs=args.jobs) if args.jobs is not None else chosen

    began = time.monotonic()
    load_before = os.getloadavg()[0]
    outcomes = []
    for name in args.scenario or [name for name in scenario.FAULTS if name != "mixed"]:
        print(f"chaos: {name} …", flush=True)
        outcomes.append(asyncio.run(scenario.run(name, sized(name))))
    findings = asyncio.run(probes.run_all())
    took = time.monotonic() - began
    # Other people's tests share the machine: its load says how far the timings can be trusted.
    load = f"load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {load}"
    jobs = args.jobs or profile.jobs
    soak = "" if args.short or args.jobs else f" ({scenario.SOAK.jobs:,} in the soak)"
    size = f"{'short' if args.short else 'full'} profile, {jobs:,} jobs a scenario{soak}"
    heading = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC · {machine} · {size}"
    report = "\n".join([heading, "", table(outcomes), "", probes.describe(findings), "", f"took {took:.0f} s"])
    print(report)
    if args.doc is not None:
        write_doc(args.doc, report)
    ok = all(o.holds for o in outcomes) and all(f.holds for f in findings)
    return 0 if ok else 1


def write_doc(path: Path, report: str) -> None:
    marker = "<!-- chaos report -->"
    text = path.read_text() if path.exists() else marker + "\n"
    head, _, _ = text.partition(marker)
    path.write_text(head + marker + "\n" + report + "\n")


if __name__ == "__main__":
    sys.exit(main())
