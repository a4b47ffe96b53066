"""`python -m bench.endurance [--profile full|short|smoke] [--system NAME ...] [--rate N ...] [--output FILE]
[--shared-server] [--report-only]`: the endurance run of issue 42. It stores what it measures as parts, one per system
and offered rate (`parts`), in a folder beside the report (docs/endurance/parts/), each as soon as its run ends; then
it writes the report (default docs/endurance.md) and, in a folder of the report's name (docs/endurance/), its plots
over time and its figures as JSON, all built from every part there, whichever invocation measured it.

It runs on a PostgreSQL cluster of its own, made for the run with PostgreSQL's defaults (autovacuum on, as in
production) and removed after it (`cluster`); `--shared-server` runs it on the server QUEUEFLOW_BENCH_DATABASE_URL
names (default 127.0.0.1:5432) instead, where the restart phase only cuts the connections.

`make endurance` measures the full profile, every system at every rate: about six hours, on a quiet machine. Where a
working session ends sooner (three hours at most on the project's machines), measure it in parts, one system at one
rate an invocation (each rebuilds the report from every part so far), then check the report names none missing:

    make endurance ENDURANCE_ARGS="--system queueflow --rate 1000"
    make endurance ENDURANCE_ARGS="--report-only"      # the report again from the parts, measuring nothing

The test suite runs the smoke profile. Exits 1 when any step failed, 2 when the parts present may not be combined with
this profile's (then nothing is measured).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench import database
from bench.endurance import cluster, parts, plots, report
from bench.endurance.profiles import PROFILES, Profile
from bench.endurance.run import run
from bench.endurance.systems import SYSTEMS, System, measured_by

DOC = Path(__file__).resolve().parents[2] / "docs" / "endurance.md"


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # as Ctrl-C does: the run's processes and its cluster are stopped on the way out


def _measure(profile: Profile, systems: list[System], rates: Sequence[float], store: Path, shared: bool) -> list[str]:
    """Measures `systems` at `rates`, storing each system's run at each rate in `store` as it ends; the failures."""
    logs = Path(tempfile.mkdtemp(prefix="queueflow-endurance-"))
    print(f"endurance, {profile.name} profile, {', '.join(f'{r:g}' for r in rates)} jobs/s: logs in {logs}", flush=True)

    def keep(part: parts.Part) -> None:
        print(f"  stored {parts.store(store, part)}", flush=True)

    with contextlib.ExitStack() as stack:
        own = None if shared else stack.enter_context(cluster.own_cluster(logs / "postgres.log"))
        admin_url = own.url if own is not None else database.ADMIN_URL
        where = f"its own cluster in {own.folder}" if own is not None else "a shared server"
        print(f"PostgreSQL: {where}, {admin_url}", flush=True)
        results = asyncio.run(run(profile, systems, logs, admin_url, own, rates=rates, keep=keep))
    return results.errors


def _combined(store: Path, profile: Profile, errors: list[str]) -> parts.Combined | None:
    try:
        return parts.combine(parts.load(store), profile, errors)
    except parts.PartError as exc:
        print(f"ERROR {store}: {exc}", file=sys.stderr)
        return None


def main() -> int:
    signal.signal(signal.SIGTERM, _interrupted)
    parser = argparse.ArgumentParser(prog="python -m bench.endurance", description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="full")
    parser.add_argument(
        "--output", type=Path, default=DOC, help="the report (default docs/endurance.md; parts in docs/endurance/parts)"
    )
    parser.add_argument(
        "--system",
        choices=sorted(SYSTEMS),
        action="append",
        help="measure this system (repeatable; default: QueueFlow, and its peers unless the profile is smoke)",
    )
    parser.add_argument(
        "--rate",
        type=int,
        action="append",
        help="measure at this offered rate, one of the profile's (repeatable; default: every one of them)",
    )
    parser.add_argument(
        "--shared-server",
        action="store_true",
        help="run on the server QUEUEFLOW_BENCH_DATABASE_URL names (default 127.0.0.1:5432), not a cluster of its own",
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="measure nothing: build the report, its plots and results.json again from the parts present",
    )
    args = parser.parse_args()
    profile = PROFILES[args.profile]
    if args.report_only and (args.system or args.rate or args.shared_server):
        parser.error("--report-only measures nothing: it takes no --system, --rate or --shared-server")
    if strangers := [rate for rate in args.rate or () if rate not in profile.rates]:
        parser.error(f"--rate {strangers[0]}: the {profile.name} profile's rates are {profile.rates}")
    folder = args.output.with_suffix("")
    store = folder / "parts"
    # Before hours of measuring: parts already there that the new ones could never be combined with.
    if _combined(store, profile, []) is None:
        return 2
    errors: list[str] = []
    if not args.report_only:
        # Each once, in the report's order, however often and in whatever order they were named.
        systems = [SYSTEMS[name] for name in SYSTEMS if name in args.system] if args.system else measured_by(profile)
        rates = [rate for rate in profile.rates if rate in args.rate] if args.rate else profile.rates
        errors = _measure(profile, systems, rates, store, args.shared_server)
    combined = _combined(store, profile, errors)
    if combined is None:
        return 2
    for error in errors:
        print(f"ERROR {error}", file=sys.stderr)
    if not combined.parts:
        print(f"ERROR no part in {store}: no report written", file=sys.stderr)
        return 1
    folder.mkdir(parents=True, exist_ok=True)
    combined.write_json(folder / "results.json")
    images = plots.draw([part.run for part in combined.parts], folder)
    args.output.write_text(report.markdown(combined, images, args.output.parent, store), encoding="utf-8")
    print(f"\nwrote {args.output}, {len(images)} plots and results.json in {folder}, from the parts in {store}:")
    print(", ".join(part.file_name for part in combined.parts))
    if combined.missing:
        print(f"no part yet of {', '.join(parts.label(*pair) for pair in combined.missing)}")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
