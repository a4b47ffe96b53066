"""Where the HTTP unique enqueue's extra time goes (issue 43; bench/results/2026-12-07-unique-mechanism.md, "Third
session: the HTTP path"). Two probes:

- `python -m bench.pgbench.unique_http_path parts [--repetitions N]`: on a scratch database, each step of a 1,000-row
  enqueue timed alone and interleaved, N times: the server's Python CPU (this process's `process_time`) and the
  PostgreSQL backend's CPU (`/proc/<pid>/stat`, in 10 ms ticks, so summed over every repetition) per step.
- `python -m bench.pgbench.unique_http_path ab A_DIR B_DIR [--pairs N] [--rows R]`: two servers, one running the
  `server/` tree of A_DIR and one of B_DIR (e.g. `git archive <commit> server | tar -x -C A_DIR`), each on its own
  database; in each pair (order alternating) both run the bench's phases: plain batch enqueue, `unique` over 1,000
  keys a client, `unique` with a new key a row. Rows/s, server CPU and PostgreSQL CPU per 1,000 rows, ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import asyncpg

from bench.cpu import process_cpu_seconds
from bench.database import BenchDatabase
from bench.scenarios import unique
from bench.scenarios.http_throughput import Throughput
from bench.server import QueueFlowServer

ROWS = 1_000


def _ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


async def parts(repetitions: int) -> None:
    from queueflow.api.schemas.jobs import Job as ApiJob
    from queueflow.core.lifecycle import pending_row
    from queueflow.core.types import Job, NewJob, UniqueRule
    from queueflow.core.unique import Ask, resolve
    from queueflow.stores.postgres import unique as store
    from queueflow.stores.postgres.connection import _decode_json_once
    from queueflow.stores.postgres.rows import job_from_row, job_insert

    now = datetime.now(UTC)

    def rows(keys: list[str | None]) -> list[Job]:
        return [
            pending_row(
                "bench",
                NewJob(task_name="noop", payload={"i": i}, unique=UniqueRule(key=key) if key else None),
                now,
                f"job_{secrets.token_hex(8)}",
            )
            for i, key in enumerate(keys)
        ]

    async with BenchDatabase("unique_parts") as database:
        database.migrate()
        db = await asyncpg.connect(database.url)
        await _decode_json_once(db)
        pid = await db.fetchval("SELECT pg_backend_pid()")
        keys = [f"customer-{i}" for i in range(ROWS)]
        existing = rows(list(keys))
        await db.execute(store.LOCK_KEYS, ["bench"] * ROWS, keys)
        statement, values = job_insert(existing, unique=True)
        await db.execute(statement, *values)
        await db.execute("ANALYZE queueflow.jobs")
        rules = [UniqueRule(key=key) for key in keys]
        lookup = [["bench"] * ROWS, keys, ["pending,retrying,running"] * ROWS, [None] * ROWS, [None] * ROWS]
        found: list[asyncpg.Record] = []
        python: dict[str, list[float]] = {}
        backend: dict[str, int] = {}

        batch: dict[str, list[Job]] = {}  # each repetition's new rows, made before the clock starts

        async def plain_insert() -> None:
            statement, values = job_insert(batch["plain"])
            await db.execute(statement, *values)

        async def unique_insert() -> None:
            statement, values = job_insert(batch["unique"], unique=True)
            await db.execute(statement, *values)

        async def lock_new() -> None:
            async with db.transaction():
                await db.fetch(store.LOCK_KEYS, ["bench"] * ROWS, sorted(job.unique_key for job in batch["unique"]))

        async def lock_existing() -> None:
            async with db.transaction():
                await db.fetch(store.LOCK_KEYS, ["bench"] * ROWS, keys)

        async def lookup_existing() -> None:
            async with db.transaction():
                await db.execute(store.CUSTOM_PLANS)
                found[:] = await db.fetch(store.FOUND, *lookup)

        async def decode() -> None:
            [job_from_row(row) for row in found]

        async def decide() -> None:
            resolve([Ask(job, rule, None, i) for i, (job, rule) in enumerate(zip(existing, rules, strict=True))])

        async def respond() -> None:
            [ApiJob.from_domain(job) for job in existing]

        steps: dict[str, Callable[[], Awaitable[None]]] = {
            "plain INSERT (no RETURNING)": plain_insert,
            "LOCK_KEYS, new keys (+ BEGIN, COMMIT)": lock_new,
            "INSERT with unique_key (those new keys)": unique_insert,
            "LOCK_KEYS, keys that exist (+ BEGIN, COMMIT)": lock_existing,
            "FOUND, keys with a job (+ SET LOCAL, BEGIN, COMMIT)": lookup_existing,
            "job_from_row of the found rows": decode,
            "resolve (Ask + decide per item)": decide,
            "Job.from_domain (the response, every path)": respond,
        }
        for _ in range(repetitions):
            batch.update(plain=rows([None] * ROWS), unique=rows([secrets.token_hex(8) for _ in range(ROWS)]))
            for name, step in steps.items():
                ticks, began = _ticks(pid), time.process_time()
                await step()
                python.setdefault(name, []).append((time.process_time() - began) * 1000)
                backend[name] = backend.get(name, 0) + _ticks(pid) - ticks
        await db.close()
    print(f"per {ROWS:,} rows, {repetitions} repetitions: Python CPU (median), PostgreSQL backend CPU (mean)")
    for name in steps:
        print(f"  {name:55s} {statistics.median(python[name]):6.2f} ms  {backend[name] * 10 / repetitions:6.2f} ms")


async def _backends_cpu(database: BenchDatabase) -> float:
    total = 0.0
    for row in await database.db.fetch(
        "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", database.name
    ):
        with contextlib.suppress(OSError):  # a backend that has just ended
            total += process_cpu_seconds(row["pid"])
    return total


async def ab(trees: dict[str, str], pairs: int, rows: int) -> None:
    sides: dict[str, tuple[BenchDatabase, QueueFlowServer, Throughput]] = {}
    figures: dict[str, dict[str, list[tuple[float, float, float]]]] = {}
    try:
        for side, tree in trees.items():
            database = await BenchDatabase(f"unique_ab_{side.lower()}").__aenter__()
            sides[side] = (database, None, None)  # type: ignore[assignment]  # dropped on failure below
            database.migrate()
            await database.connect()
            os.environ["PYTHONPATH"] = f"{os.path.abspath(tree)}/server:{os.getcwd()}"  # noqa: ASYNC240
            server = QueueFlowServer(database.url, Path(tempfile.mkdtemp()) / "server.log").start(timeout=300)
            throughput = await Throughput(server, database, 0.2).open()
            sides[side] = (database, server, throughput)
            await throughput.warm_up(4_000)
            figures[side] = {"plain": [], "unique": [], "fresh": []}
        for number in range(pairs):
            for side in ("A", "B") if number % 2 == 0 else ("B", "A"):
                database, _, throughput = sides[side]
                phases = {
                    "plain": throughput.enqueue(rows),
                    "unique": unique.enqueue_unique(throughput, rows),
                    "fresh": unique.enqueue_unique(throughput, rows, fresh=True),
                }
                for name, phase in phases.items():
                    before = await _backends_cpu(database)
                    run = await phase
                    postgres = (await _backends_cpu(database) - before) / rows * 1e6
                    figures[side][name].append((run.rate, run.server_cpu_per_1000 * 1000, postgres))
                line = " | ".join(
                    f"{n} {v[-1][0]:,.0f}/s srv {v[-1][1]:.1f} pg {v[-1][2]:.1f}" for n, v in figures[side].items()
                )
                print(f"pair {number + 1} {side}: {line}", flush=True)
        for side, runs in figures.items():
            for name in ("unique", "fresh"):
                ratios = [u[0] / p[0] for u, p in zip(runs[name], runs["plain"], strict=True)]
                print(
                    f"{side} {name} ÷ plain, rows/s: median {statistics.median(ratios):.3f}"
                    f" ({', '.join(f'{r:.2f}' for r in ratios)})"
                )
            for name, values in runs.items():
                print(
                    f"{side} {name}: {statistics.median(v[0] for v in values):,.0f} rows/s, server"
                    f" {statistics.median(v[1] for v in values):.1f} ms, PostgreSQL"
                    f" {statistics.median(v[2] for v in values):.1f} ms per 1,000 rows (medians)"
                )
    finally:
        for database, server, throughput in sides.values():
            if throughput is not None:
                await throughput.close()
            if server is not None:
                server.stop()
            await database.__aexit__(None, None, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="probe", required=True)
    parts_parser = sub.add_parser("parts")
    parts_parser.add_argument("--repetitions", type=int, default=25)
    ab_parser = sub.add_parser("ab")
    ab_parser.add_argument("a")
    ab_parser.add_argument("b")
    ab_parser.add_argument("--pairs", type=int, default=5)
    ab_parser.add_argument("--rows", type=int, default=30_000)
    args = parser.parse_args()
    if args.probe == "parts":
        asyncio.run(parts(args.repetitions))
    else:
        asyncio.run(ab({"A": args.a, "B": args.b}, args.pairs, args.rows))


if __name__ == "__main__":
    main()
