"""Lease latency with a large history of finished jobs vs none: the partial claim index should make them equal.

One worker leases one job at a time (and completes it, untimed) from a backlog of pending jobs; the figure is the
median lease round trip. The finished rows are written by one INSERT … SELECT generate_series, then vacuumed.
"""

from __future__ import annotations

import time

import msgspec

from bench import stats
from bench.database import BenchDatabase
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
    server: QueueFlowServer, database: BenchDatabase, *, samples: int, finished_rows: int, repetitions: int
) -> tuple[list[float], list[float]]:
    """(median lease latency per repetition with no history, the same with `finished_rows` finished jobs)."""
    empty, full = [], []
    for _ in range(repetitions):
        await database.reset_jobs()
        empty.append(stats.median(await lease_latencies(server, database, samples)))
    await database.reset_jobs()
    await database.seed_finished(finished_rows)
    for _ in range(repetitions):
        # Only the pending backlog is renewed; the history (and what each repetition adds to it) stays.
        await database.db.execute("DELETE FROM queueflow.jobs WHERE queue_name = $1", QUEUE)
        full.append(stats.median(await lease_latencies(server, database, samples)))
    return empty, full
