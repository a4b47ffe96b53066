"""HTTP throughput against a live server: batch enqueue, single drain (lease 1 + complete 1), batched drain
(lease 100 + ack 100). Every client keeps its connection alive; jobs are no-ops, so the server is what is timed.
"""

from __future__ import annotations

import asyncio
import resource
import time
from dataclasses import dataclass

import msgspec

from bench.database import BenchDatabase, SessionCounter
from bench.httpclient import Connection, close_all, connections
from bench.server import TENANT_KEY, WORKER_KEY, QueueFlowServer

QUEUE = "bench"
CLIENTS = 4
ENQUEUE_BATCH = 1000
DRAIN_BATCH = 100


@dataclass(frozen=True, slots=True)
class HttpRun:
    """One timed phase: what it did, how long it took, what it cost the server and the client."""

    items: int
    seconds: float
    server_cpu: float
    client_cpu: float
    new_sessions: int = 0

    @property
    def rate(self) -> float:
        return self.items / self.seconds

    @property
    def server_cpu_per_1000(self) -> float:
        return self.server_cpu / self.items * 1000


def _client_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Phase:
    """Times a block of work and records the server's and the client's CPU and the new sessions it opened."""

    def __init__(self, server: QueueFlowServer, database: BenchDatabase, settle: float) -> None:
        self._server, self._sessions = server, SessionCounter(database, settle)

    async def __aenter__(self) -> Phase:
        await self._sessions.start()
        self._cpu, self._client = self._server.cpu_seconds(), _client_cpu()
        self._started = time.perf_counter()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.seconds = time.perf_counter() - self._started
        self.server_cpu = self._server.cpu_seconds() - self._cpu
        self.client_cpu = _client_cpu() - self._client
        self.new_sessions = await self._sessions.stop()

    def run(self, items: int) -> HttpRun:
        return HttpRun(items, self.seconds, self.server_cpu, self.client_cpu, self.new_sessions)


def enqueue_body(count: int, queue: str = QUEUE) -> bytes:
    return msgspec.json.encode(
        {"jobs": [{"task_name": "noop", "queue_name": queue, "payload": {"i": i}} for i in range(count)]}
    )


async def enqueue_all(tenants: list[Connection], rows: int, queue: str = QUEUE) -> None:
    """`rows` jobs in 1,000-job batches, spread over the connections."""
    body = enqueue_body(ENQUEUE_BATCH, queue)
    requests = [body] * (rows // ENQUEUE_BATCH)
    if rows % ENQUEUE_BATCH:
        requests.append(enqueue_body(rows % ENQUEUE_BATCH, queue))

    async def client(connection: Connection) -> None:
        while requests:
            await connection.post("/v1/jobs/batch", requests.pop(), 201, decode=False)

    await asyncio.gather(*(client(connection) for connection in tenants))


async def drain_single(workers: list[Connection], queue: str = QUEUE) -> int:
    lease = msgspec.json.encode({"queues": [queue], "max_jobs": 1, "lease_seconds": 60})

    async def client(connection: Connection) -> int:
        done = 0
        while jobs := (await connection.post("/v1/worker/lease", lease))["jobs"]:
            job = jobs[0]
            await connection.post(
                f"/v1/worker/jobs/{job['id']}/complete",
                {"lease_token": job["lease_token"], "result": {"ok": True}},
                decode=False,
            )
            done += 1
        return done

    return sum(await asyncio.gather(*(client(connection) for connection in workers)))


async def drain_batched(workers: list[Connection], queue: str = QUEUE) -> int:
    lease = msgspec.json.encode({"queues": [queue], "max_jobs": DRAIN_BATCH, "lease_seconds": 60})

    async def client(connection: Connection) -> int:
        done = 0
        while jobs := (await connection.post("/v1/worker/lease", lease))["jobs"]:
            complete = [{"id": job["id"], "lease_token": job["lease_token"], "result": {"ok": True}} for job in jobs]
            answer = await connection.post("/v1/worker/ack", {"complete": complete})
            lost = [item for item in answer["results"] if item["outcome"] != "ok"]
            if lost:
                raise RuntimeError(f"ack lost {len(lost)} leases, e.g. {lost[0]}")
            done += len(jobs)
        return done

    return sum(await asyncio.gather(*(client(connection) for connection in workers)))


@dataclass(slots=True)
class ThroughputRuns:
    enqueue: list[HttpRun]
    single: list[HttpRun]
    batched: list[HttpRun]
    peak_rss: list[int]


async def measure(
    server: QueueFlowServer,
    database: BenchDatabase,
    *,
    repetitions: int,
    enqueue_rows: int,
    single_jobs: int,
    batched_jobs: int,
    settle: float,
    warm_up: int,
) -> ThroughputRuns:
    tenants = await connections("127.0.0.1", server.port, TENANT_KEY, CLIENTS)
    workers = await connections("127.0.0.1", server.port, WORKER_KEY, CLIENTS)
    runs = ThroughputRuns([], [], [], [])
    try:
        # Warm-up: the server's pool fills, its statements are prepared, Python's caches are warm.
        await enqueue_all(tenants, warm_up // 10)
        await drain_single(workers)
        await enqueue_all(tenants, warm_up)
        await drain_batched(workers)
        for _ in range(repetitions):
            await database.reset_jobs()
            await database.vacuum()
            async with Phase(server, database, settle) as phase:
                await enqueue_all(tenants, enqueue_rows)
            runs.enqueue.append(phase.run(enqueue_rows))

            await _seed(database, tenants, single_jobs)
            async with Phase(server, database, settle) as phase:
                done = await drain_single(workers)
            runs.single.append(_checked(phase.run(done), single_jobs, "single drain"))

            await _seed(database, tenants, batched_jobs)
            server.reset_peak_rss()
            async with Phase(server, database, settle) as phase:
                done = await drain_batched(workers)
            runs.peak_rss.append(server.peak_rss_bytes())
            runs.batched.append(_checked(phase.run(done), batched_jobs, "batched drain"))
    finally:
        await close_all(tenants + workers)
    return runs


async def _seed(database: BenchDatabase, tenants: list[Connection], jobs: int) -> None:
    """Pending jobs through the API, untimed, then the same VACUUM the raw baseline gets."""
    await database.reset_jobs()
    await enqueue_all(tenants, jobs)
    await database.vacuum()


def _checked(run: HttpRun, expected: int, what: str) -> HttpRun:
    if run.items != expected:
        raise RuntimeError(f"{what}: drained {run.items} of {expected} jobs")
    return run
