"""Lease latency with a large history of finished jobs vs none: the partial claim index should make them equal.

One worker leases one job at a time (and completes it, untimed) from a backlog of pending jobs; the figure is the
median lease round trip. The finished rows are written by one INSERT … SELECT generate_series, then vacuumed.

The two sides run on two databases, each with its own server, in alternating rounds (which side goes first
alternates too). Measured one after the other, as they were at first, the ratio followed the machine's load
between the two phases, not the history: 0.76, 1.16 and 1.60 in three runs of the same code.
"""

from __future__ import annotations

import time
from pathlib import Path

import msgspec

from bench import stats
from bench.database import BenchDatabase, SessionCounter
from bench.httpclient import close_all, connections
from bench.scenarios.http_throughput import enqueue_all
from bench.server import TENANT_KEY, WORKER_KEY, QueueFlowServer

QUEUE = "history"


async def lease_latencies(server: QueueFlowServer, database: BenchDatabase, samples: int) -> list[float]:
    """Lease round trips in seconds, one job each, from `samples` pending jobs seeded first (untimed)."""
    tenants = await connections("127.0.0.1", server.port, TENANT_KEY, 2)
    worker = (await connections("127.0.0.1", server.port, WORKER_KEY, 1))[0]
    lease = msgspec.json.encode({"queues": [QUEUE], "max_jobs": 1, "lease_seconds": 60})
    latencies: list[float] = []
    try:
        await enqueue_all(tenants, samples, QUEUE)
        await database.vacuum()
        for _ in range(samples):
            started = time.perf_counter()
            job = (await worker.post("/v1/worker/lease", lease))["jobs"][0]
            latencies.append(time.perf_counter() - started)
            body = {"lease_token": job["lease_token"], "result": None}
            await worker.post(f"/v1/worker/jobs/{job['id']}/complete", body, decode=False)
    finally:
        await close_all([*tenants, worker])
    return latencies


async def measure(
    server: QueueFlowServer,
    database: BenchDatabase,
    logs: Path,
    *,
    samples: int,
    finished_rows: int,
    repetitions: int,
    server_args: tuple[str, ...] = (),
    settle: float = 0.0,
) -> tuple[list[float], list[float], int]:
    """(median lease latency per round with no history, the same with `finished_rows` finished jobs, the new
    sessions the second server opened after its warm-up). `server` and `database` are the empty side."""
    empty: list[float] = []
    full: list[float] = []
    async with BenchDatabase("history") as history_db:
        history_db.migrate()
        await history_db.connect()
        await history_db.seed_finished(finished_rows)
        with QueueFlowServer(history_db.url, logs / "server-history.log", server_args) as history_server:
            sides = [
                (server, database, empty),
                (history_server, history_db, full),
            ]
            await lease_latencies(history_server, history_db, min(samples, 50))  # its pool and statements
            counter = SessionCounter(history_db, settle)
            await counter.start()
            for round_number in range(repetitions):
                for side_server, side_db, medians in sides[:: 1 if round_number % 2 == 0 else -1]:
                    # Only the pending backlog is renewed; the history (and what each round adds to it) stays.
                    await side_db.db.execute("DELETE FROM queueflow.jobs WHERE queue_name = $1", QUEUE)
                    medians.append(stats.median(await lease_latencies(side_server, side_db, samples)))
            new_sessions = await counter.stop()
    return empty, full, new_sessions
