"""Where a pushed job's server time goes (issue 45): one push drain under py-spy, with the database's transactions
and row writes per job.

pg_stat_statements needs `shared_preload_libraries`, which the shared PostgreSQL here does not load (and a restart
would cut off every other session), so the database's side is counted from pg_stat_database (commits) and
pg_stat_user_tables (rows inserted, updated, deleted by table) over the drain, per job.

    .venv/bin/python -m bench.push_profile [--jobs 20000] [--output /tmp/push.svg]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.database import BenchDatabase
from bench.scenarios import push
from bench.server import QueueFlowServer

TABLES = "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del, n_tup_hot_upd FROM pg_stat_user_tables"


async def counters(database: BenchDatabase) -> tuple[int, dict[str, tuple[int, ...]]]:
    await database.db.execute("SELECT pg_stat_clear_snapshot()")
    commits = await database.db.fetchval("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
    rows = {row[0]: tuple(row[1:]) for row in await database.db.fetch(TABLES)}
    return commits, rows


async def main(jobs: int, output: Path, spy: bool) -> None:
    logs = Path(tempfile.mkdtemp(prefix="queueflow-push-profile-"))
    async with BenchDatabase("pushprofile") as database:
        database.migrate()
        await database.connect()
        server = QueueFlowServer(database.url, logs / "server.log", push.SERVER_ARGS).start()
        try:
            async with push.PushBench(database, server, logs) as bench:
                await bench.push_drain(min(jobs, 2000))  # warm
                await asyncio.sleep(1.2)  # statistics flushed
                before = await counters(database)
                recorder = None
                if spy:
                    recorder = subprocess.Popen(  # noqa: ASYNC220 - started once, not waited on here
                        [str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(server.pid),
                         "--rate", "200", "--format", "raw", "--output", str(output), "--nonblocking"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    )  # fmt: skip
                    await asyncio.sleep(1.0)
                run = await bench.push_drain(jobs)
                if recorder is not None:
                    recorder.send_signal(2)  # SIGINT: py-spy writes its stacks and exits
                    await asyncio.to_thread(recorder.wait)
                await asyncio.sleep(1.2)
                after = await counters(database)
            print(push.describe(run))
            print(f"server CPU per job: {run.server_cpu / run.jobs * 1e6:.0f} µs")
            # The drain's warm-up job and the table's reset are inside the window too: a handful of commits.
            print(f"commits per job: {(after[0] - before[0]) / jobs:.2f}")
            for table, values in sorted(after[1].items()):
                old = before[1].get(table, (0, 0, 0, 0))
                delta = [(a - b) / jobs for a, b in zip(values, old, strict=True)]
                if any(delta):
                    print(f"  {table}: per job ins {delta[0]:.2f} upd {delta[1]:.2f} del {delta[2]:.2f}"
                          f" (hot {delta[3]:.2f})")  # fmt: skip
        finally:
            server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--output", type=Path, default=Path("/tmp/push-profile.txt"))
    parser.add_argument("--no-spy", action="store_true")
    args = parser.parse_args()
    asyncio.run(main(args.jobs, args.output, not args.no_spy))
