"""Bytes on disk per finished job, by counts on a quiet database: N jobs with the endurance run's 256-byte payload
pushed through enqueue → claim → complete, a VACUUM, then every relation of the system (table, its TOAST, each
index) divided by N. Issue 42's target compares QueueFlow's figure with Procrastinate's jobs + events.

    python -m bench.endurance.footprint URL [--jobs 100000] [--batch 5] [--keys sdk|endurance|none]

URL is an empty database at QueueFlow's head (`queueflow migrate`). A real `queueflow serve` runs on it, and the
jobs travel as the endurance run's do: `POST /v1/jobs/batch` (each item with an idempotency key shaped as the Python
SDK makes one: `qf-client-<uuid4>`; `--keys endurance` as the endurance producer names them, `none` without), then
a lease of up to 32 jobs and an ack of every one leased, result null, as the SDK's worker acks a task that returns
None. `--batch` jobs go in per enqueue (5: the endurance producer at 1,000 jobs/s), and a round's lease follows its
enqueue, so rows are updated while their page is fresh, as in a run that keeps up. Procrastinate's side is
bench/peers/procrastinate_footprint.py, which prints the same table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
import uuid
from pathlib import Path

import asyncpg
import msgspec

from bench.endurance import wire
from bench.httpclient import Connection
from bench.peers import launch
from bench.server import ROOT, TENANT_KEY, WORKER_KEY, QueueFlowServer

QUEUE = "endurance"
TASK = "endurance"
SLOTS = 32

SIZES = """
SELECT c.oid::regclass::text AS name, c.relkind::text AS kind, coalesce(i.indrelid, c.oid)::regclass::text AS of_table,
       pg_relation_size(c.oid) AS main,
       CASE WHEN c.reltoastrelid <> 0 THEN pg_total_relation_size(c.reltoastrelid) ELSE 0 END AS toast
  FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace LEFT JOIN pg_index AS i ON i.indexrelid = c.oid
 WHERE c.relkind IN ('r', 'i') AND ({tables})
 ORDER BY coalesce(i.indrelid, c.oid)::regclass::text, c.relkind DESC, 1
"""
QUEUEFLOW_TABLES = "n.nspname = 'queueflow' AND c.relname <> 'alembic_version'"
PROCRASTINATE_TABLES = "n.nspname = 'public' AND c.relname LIKE 'procrastinate%'"
FINISHED = {
    "queueflow": "SELECT count(*) FROM queueflow.jobs WHERE status = 'completed'",
    "procrastinate": "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'",
}
HOT = {"queueflow": "queueflow.jobs", "procrastinate": "procrastinate_jobs, procrastinate_events"}


def key_of(style: str, prefix: str, n: int) -> str | None:
    if style == "sdk":
        return f"qf-client-{uuid.uuid4()}"
    if style == "endurance":
        return f"{prefix}-{n}"
    return None


class Tally:
    def __init__(self, jobs: int) -> None:
        self.jobs, self.sent, self.done = jobs, 0, 0


async def push(port: int, jobs: int, batch: int, keys: str, pipelines: int) -> None:
    """`pipelines` producer-and-worker pairs at once, until the jobs are sent and done."""
    tally = Tally(jobs)
    await asyncio.gather(*(pipeline(port, tally, batch, keys) for _ in range(pipelines)))


async def pipeline(port: int, tally: Tally, batch: int, keys: str) -> None:
    producer = await Connection("127.0.0.1", port, TENANT_KEY).open()
    worker = await Connection("127.0.0.1", port, WORKER_KEY).open()
    prefix = f"endurance-{uuid.uuid4().hex[:8]}"
    while tally.done < tally.jobs:
        if tally.sent < tally.jobs:
            first = tally.sent
            tally.sent = min(tally.jobs, first + batch)
            items = []
            for n in range(first, tally.sent):
                item: dict[str, object] = {"task_name": TASK, "queue_name": QUEUE, "payload": wire.payload(n, 0.0)}
                key = key_of(keys, prefix, n)
                if key is not None:
                    item["idempotency_key"] = key
                items.append(item)
            await producer.post("/v1/jobs/batch", msgspec.json.encode({"jobs": items}), 201, decode=False)
        leased = await worker.post(
            "/v1/worker/lease", msgspec.json.encode({"queues": [QUEUE], "max_jobs": SLOTS, "lease_seconds": 30})
        )
        held = [{"id": job["id"], "lease_token": job["lease_token"], "result": None} for job in leased["jobs"]]
        if held:
            answer = await worker.post("/v1/worker/ack", msgspec.json.encode({"complete": held, "fail": []}))
            assert all(result["outcome"] == "ok" for result in answer["results"]), answer
            tally.done += len(held)
        elif tally.sent >= tally.jobs:
            await asyncio.sleep(0.01)  # the rest is leased by the other pipelines, acked soon
    await producer.close()
    await worker.close()


async def breakdown(url: str, tables: str, jobs: int) -> list[dict[str, object]]:
    """Every relation's bytes, and bytes a job, after a VACUUM (pages freed by it stay in the file, as on a
    database that keeps running)."""
    db = await asyncpg.connect(url)
    try:
        names = [row["name"] for row in await db.fetch(SIZES.replace("{tables}", tables)) if row["kind"] == "r"]
        for name in names:
            await db.execute(f"VACUUM (ANALYZE) {name}")
        rows = await db.fetch(SIZES.replace("{tables}", tables))
    finally:
        await db.close()
    out = []
    for row in rows:
        out.append({"relation": row["name"], "kind": "table" if row["kind"] == "r" else "index", "of": row["of_table"],
                    "bytes": row["main"], "toast": row["toast"], "per_job": row["main"] / jobs,
                    "toast_per_job": row["toast"] / jobs})  # fmt: skip
    return out


def table(rows: list[dict[str, object]]) -> str:
    lines = ["| relation | bytes | bytes/job |", "|---|---:|---:|"]
    total = 0.0
    for row in rows:
        if row["bytes"] + row["toast"] <= 16384:  # type: ignore[operator]
            continue  # an empty table's TOAST, an empty index's metapage and root
        lines.append(f"| {row['relation']} | {row['bytes']:,} | {row['per_job']:.1f} |")
        total += float(row["per_job"])  # type: ignore[arg-type]
        if row["toast"]:
            lines.append(f"| {row['relation']} (TOAST) | {row['toast']:,} | {row['toast_per_job']:.1f} |")
            total += float(row["toast_per_job"])  # type: ignore[arg-type]
    lines.append(f"| **total** | | **{total:.1f}** |")
    return "\n".join(lines)


async def autovacuum(url: str, system: str, every: int, stop: asyncio.Event) -> int:
    """What autovacuum would do on a server that runs it (the test server here does not): a VACUUM of the hot
    tables each time `every` more jobs have finished. Without it every claim walks the dead entries of the
    finished jobs (the run slows down quadratically) and no dead version's space is ever reused."""
    db = await asyncpg.connect(url)
    vacuums, last = 0, 0
    try:
        while not stop.is_set():
            finished = await db.fetchval(FINISHED[system])
            if finished - last >= every:
                await db.execute(f"VACUUM {HOT[system]}")
                vacuums, last = vacuums + 1, finished
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)
    finally:
        await db.close()
    return vacuums


async def run(args: argparse.Namespace) -> int:
    stop = asyncio.Event()
    vacuuming = asyncio.create_task(autovacuum(args.url, args.system, args.vacuum_every, stop))
    try:
        if args.system == "procrastinate":
            peer = [str(launch.ensure_venv()), "-m", "bench.peers.procrastinate_footprint", args.url]
            process = await asyncio.create_subprocess_exec(
                *peer, str(args.jobs), str(args.batch), str(args.pipelines), cwd=ROOT
            )
            if await process.wait() != 0:
                raise RuntimeError("procrastinate_footprint failed")
        else:
            with tempfile.TemporaryDirectory() as logs:
                server = QueueFlowServer(args.url, Path(logs) / "server.log").start(timeout=600)  # a loaded machine
                try:
                    await push(server.port, args.jobs, args.batch, args.keys, args.pipelines)
                finally:
                    server.stop()
    finally:
        stop.set()
    return await vacuuming


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.endurance.footprint")
    parser.add_argument("url")
    parser.add_argument("--system", choices=("queueflow", "procrastinate"), default="queueflow")
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=5)
    parser.add_argument("--keys", choices=("sdk", "endurance", "none"), default="sdk")
    parser.add_argument("--pipelines", type=int, default=4)
    parser.add_argument("--vacuum-every", type=int, default=10_000, help="finished jobs between VACUUMs")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.system == "procrastinate":
        launch.ensure_venv()  # before the clock of the run starts: pip may install it
    vacuums = asyncio.run(run(args))
    tables = PROCRASTINATE_TABLES if args.system == "procrastinate" else QUEUEFLOW_TABLES
    rows = asyncio.run(breakdown(args.url, tables, args.jobs))
    print(f"{args.system}: {args.jobs:,} jobs, keys {args.keys}, batch {args.batch}, {vacuums} vacuums during the run")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
