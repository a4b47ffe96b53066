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


class Throughput:
    """The three HTTP throughput phases against one server, on 4 tenant and 4 worker connections kept open.

    Each phase is one repetition, so that the run can interleave them with their raw baselines: on a shared
    machine the load drifts over minutes, and a figure and its baseline should see the same."""

    def __init__(self, server: QueueFlowServer, database: BenchDatabase, settle: float) -> None:
        self._server, self._database, self._settle = server, database, settle
        self._tenants: list[Connection] = []
        self._workers: list[Connection] = []

    async def open(self) -> Throughput:
        self._tenants = await connections("127.0.0.1", self._server.port, TENANT_KEY, CLIENTS)
        self._workers = await connections("127.0.0.1", self._server.port, WORKER_KEY, CLIENTS)
        return self

    async def close(self) -> None:
        await close_all(self._tenants + self._workers)

    async def warm_up(self, jobs: int) -> None:
        """The server's pool fills, its statements are prepared, Python's caches are warm."""
        await enqueue_all(self._tenants, jobs // 10)
        await drain_single(self._workers)
        await enqueue_all(self._tenants, jobs)
        await drain_batched(self._workers)

    async def enqueue(self, rows: int) -> HttpRun:
        await self._database.reset_jobs()
        await self._database.vacuum()
        async with Phase(self._server, self._database, self._settle) as phase:
            await enqueue_all(self._tenants, rows)
        return phase.run(rows)

    async def single_drain(self, jobs: int) -> HttpRun:
        await self._seed(jobs)
        async with Phase(self._server, self._database, self._settle) as phase:
            done = await drain_single(self._workers)
        return _checked(phase.run(done), jobs, "single drain")

    async def batched_drain(self, jobs: int) -> tuple[HttpRun, int]:
        """The run, and the server's peak RSS during it."""
        await self._seed(jobs)
        self._server.reset_peak_rss()
        async with Phase(self._server, self._database, self._settle) as phase:
            done = await drain_batched(self._workers)
        return _checked(phase.run(done), jobs, "batched drain"), self._server.peak_rss_bytes()

    async def _seed(self, jobs: int) -> None:
        """Pending jobs through the API, untimed, then the same VACUUM the raw baseline gets."""
        await self._database.reset_jobs()
        await enqueue_all(self._tenants, jobs)
        await self._database.vacuum()


def _checked(run: HttpRun, expected: int, what: str) -> HttpRun:
    if run.items != expected:
        raise RuntimeError(f"{what}: drained {run.items} of {expected} jobs")
    return run
