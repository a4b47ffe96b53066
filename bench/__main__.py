"""`python -m bench [--profile full|smoke] [--output FILE]`: run the benchmark, print its table, write its report.

`make bench` is the full profile writing bench/RESULTS.md; `make bench-smoke` (and the test suite) the smoke one.
Exits 1 when any scenario failed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from bench.profiles import PROFILES
from bench.run import run

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="full")
    parser.add_argument("--output", type=Path, help="where to write the report (default: bench/RESULTS.md for full)")
    args = parser.parse_args()
    profile = PROFILES[args.profile]
    output = args.output or (RESULTS if profile.name == "full" else None)
    results = asyncio.run(run(profile))
    print()
    print(results.table())
    for line in results.details:
        print(f"  {line}")
    if output is not None:
        output.write_text(results.markdown(), encoding="utf-8")
        print(f"\nwrote {output}")
    for error in results.errors:
        print(f"ERROR {error}", file=sys.stderr)
    return 1 if results.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
