"""`python -m bench [--profile full|smoke] [--output FILE] [--only jobs|workers|push|workflows]`: run the benchmark,
print its table, write its report.

`make bench` is the full profile: it writes bench/RESULTS.md, which holds the latest run only, and the same report to
bench/results/DATE.md, one file per run (notes written by hand about a run go into both, and stay in the second).
`make bench-smoke` (and the test suite) is the smoke one.
Exits 1 when any scenario failed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from bench.profiles import PROFILES
from bench.run import SECTIONS, run

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
HISTORY = RESULTS.parent / "results"


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="full")
    parser.add_argument(
        "--output", type=Path, help="where to write the report (default, for full: bench/RESULTS.md and bench/results/)"
    )
    parser.add_argument(
        "--only",
        choices=SECTIONS,
        action="append",
        help="run this part alone (repeatable; the report is then written only to --output)",
    )
    args = parser.parse_args()
    profile = PROFILES[args.profile]
    recorded = args.output is None and profile.name == "full" and not args.only
    results = asyncio.run(run(profile, sections=args.only or SECTIONS))
    print()
    print(results.table())
    for line in results.details:
        print(f"  {line}")
    outputs = [RESULTS, HISTORY / f"{results.machine.stamp}.md"] if recorded else [args.output]
    for path in filter(None, outputs):
        path.write_text(results.markdown(), encoding="utf-8")
        print(f"\nwrote {path}")
    for error in results.errors:
        print(f"ERROR {error}", file=sys.stderr)
    return 1 if results.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
