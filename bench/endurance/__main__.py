"""`python -m bench.endurance --profile full|short|smoke [--output FILE] [--system NAME ...] [--shared-server]`: the
endurance run of issue 42; writes its report (default docs/endurance.md), and beside it, in a folder of the report's
name (docs/endurance/), its plots over time and its figures as JSON.

It runs on a PostgreSQL cluster of its own, made for the run with PostgreSQL's defaults (autovacuum on, as in
production) and removed after it (`cluster`); `--shared-server` runs it on the server QUEUEFLOW_BENCH_DATABASE_URL
names (default 127.0.0.1:5432) instead, where the restart phase only cuts the connections.

`make endurance` is the full profile (hours: run it on a quiet machine); the test suite runs the smoke one.
Exits 1 when any step failed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import tempfile
from pathlib import Path

from bench import database
from bench.endurance import cluster, plots, report
from bench.endurance.profiles import PROFILES
from bench.endurance.run import run
from bench.endurance.systems import SYSTEMS

DOC = Path(__file__).resolve().parents[2] / "docs" / "endurance.md"


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # as Ctrl-C does: the run's processes and its cluster are stopped on the way out


def main() -> int:
    signal.signal(signal.SIGTERM, _interrupted)
    parser = argparse.ArgumentParser(prog="python -m bench.endurance", description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="full")
    parser.add_argument("--output", type=Path, default=DOC, help="the report (default docs/endurance.md)")
    parser.add_argument(
        "--system",
        choices=sorted(SYSTEMS),
        action="append",
        help="measure this system (repeatable; default: QueueFlow, and its peers unless the profile is smoke)",
    )
    parser.add_argument(
        "--shared-server",
        action="store_true",
        help="run on the server QUEUEFLOW_BENCH_DATABASE_URL names (default 127.0.0.1:5432), not a cluster of its own",
    )
    args = parser.parse_args()
    profile = PROFILES[args.profile]
    names = args.system or (sorted(SYSTEMS, key=list(SYSTEMS).index) if profile.peers else ["queueflow"])
    logs = Path(tempfile.mkdtemp(prefix="queueflow-endurance-"))
    print(f"endurance, {profile.name} profile: logs in {logs}", flush=True)
    with contextlib.ExitStack() as stack:
        own = None if args.shared_server else stack.enter_context(cluster.own_cluster(logs / "postgres.log"))
        admin_url = own.url if own is not None else database.ADMIN_URL
        where = f"its own cluster in {own.folder}" if own is not None else "a shared server"
        print(f"PostgreSQL: {where}, {admin_url}", flush=True)
        results = asyncio.run(run(profile, [SYSTEMS[name] for name in names], logs, admin_url, own))
    folder = args.output.with_suffix("")
    folder.mkdir(parents=True, exist_ok=True)
    results.write_json(folder / "results.json")
    images = plots.draw(results, folder)
    args.output.write_text(report.markdown(results, profile, images, args.output.parent), encoding="utf-8")
    print(f"\nwrote {args.output}, {len(images)} plots and results.json in {folder}")
    for error in results.errors:
        print(f"ERROR {error}", file=sys.stderr)
    return 1 if results.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
