"""HTTP throughput against a live server: batch enqueue, single drain (lease 1 + complete 1), batched drain
(lease 100 + ack 100), of one tenant's backlog and of one spread over MANY_TENANTS tenants. Every client keeps its
connection alive; jobs are no-ops, so the server is what is timed.
"""

from __future__ import annotations

import asyncio
import random
import resource
import time
from dataclasses import dataclass

import msgspec

from bench.cpu import PostgresCpu
from bench.database import BenchDatabase, SessionCounter
from bench.httpclient import Connection, close_all, connections
from bench.server import MANY_TENANT_KEYS, MANY_TENANTS, TENANT_KEY, WORKER_KEY, QueueFlowServer

QUEUE = "bench"
CLIENTS = 4
ENQUEUE_BATCH = 1000
DRAIN_BATCH = 100
MEAN_BURST = 20
"""Jobs a tenant enqueues in one request of the spread backlog, on average (1 to its share, exponentially)."""


@dataclass(frozen=True, slots=True)
class HttpRun:
    """One timed phase: what it did, how long it took, what it cost the server, the client and PostgreSQL."""

    items: int
    seconds: float
    server_cpu: float
    client_cpu: float
    new_sessions: int = 0
    postgres: PostgresCpu | None = None

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
    """Times a block of work and records the server's, the client's (this process's) and the database's backends'
    CPU, and the new sessions it opened."""

    def __init__(self, server: QueueFlowServer, database: BenchDatabase, settle: float) -> None:
        self._server, self._database, self._sessions = server, database, SessionCounter(database, settle)

    async def __aenter__(self) -> Phase:
        await self._sessions.start()
        self._postgres = await self._database.postgres_cpu().__aenter__()
        self._cpu, self._client = self._server.cpu_seconds(), _client_cpu()
        self._started = time.perf_counter()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.seconds = time.perf_counter() - self._started
        self.server_cpu = self._server.cpu_seconds() - self._cpu
        self.client_cpu = _client_cpu() - self._client
        await self._postgres.__aexit__(None, None, None)
        self.new_sessions = await self._sessions.stop()

    def run(self, items: int) -> HttpRun:
        return HttpRun(items, self.seconds, self.server_cpu, self.client_cpu, self.new_sessions, self._postgres.result)


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


def bursts(tenants: list[Connection], jobs: int) -> list[list[tuple[Connection, bytes]]]:
    """`jobs` spread evenly over `tenants`, each tenant's share cut into bursts of random size, the bursts of all
    tenants shuffled together, as independent applications enqueue: any stretch of the backlog holds many tenants'
    jobs, none sorted by tenant. One list of (tenant, batch body) a client; each tenant in one list only, since a
    connection carries one request at a time. Seeded, so every repetition drains the same backlog."""
    rng = random.Random(0)
    plan: list[tuple[int, int]] = []
    for number in range(len(tenants)):
        left = jobs // len(tenants) + (number < jobs % len(tenants))
        while left:
            size = min(left, 1 + int(rng.expovariate(1 / MEAN_BURST)))
            plan.append((number, size))
            left -= size
    rng.shuffle(plan)
    streams: list[list[tuple[Connection, bytes]]] = [[] for _ in range(CLIENTS)]
    for number, size in plan:
        streams[number % CLIENTS].append((tenants[number], enqueue_body(size)))
    return streams


async def enqueue_bursts(streams: list[list[tuple[Connection, bytes]]]) -> None:
    async def client(stream: list[tuple[Connection, bytes]]) -> None:
        for connection, body in stream:
            await connection.post("/v1/jobs/batch", body, 201, decode=False)

    await asyncio.gather(*(client(stream) for stream in streams))


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
    """The HTTP throughput phases against one server, on 4 tenant and 4 worker connections kept open, and one for
    each of the MANY_TENANTS tenants.

    Each phase is one repetition, so that the run can interleave them with their raw baselines: on a shared
    machine the load drifts over minutes, and a figure and its baseline should see the same."""

    def __init__(self, server: QueueFlowServer, database: BenchDatabase, settle: float) -> None:
        self._server, self._database, self._settle = server, database, settle
        self._tenants: list[Connection] = []
        self._workers: list[Connection] = []
        self._many: list[Connection] = []

    async def open(self) -> Throughput:
        self._tenants = await connections("127.0.0.1", self._server.port, TENANT_KEY, CLIENTS)
        self._workers = await connections("127.0.0.1", self._server.port, WORKER_KEY, CLIENTS)
        self._many = list(
            await asyncio.gather(*(Connection("127.0.0.1", self._server.port, key).open() for key in MANY_TENANT_KEYS))
        )
        return self

    async def close(self) -> None:
        await close_all(self._tenants + self._workers + self._many)

    def phase(self) -> Phase:
        """A timed phase on this server and database (for the scenarios built on these connections)."""
        return Phase(self._server, self._database, self._settle)

    @property
    def database(self) -> BenchDatabase:
        return self._database

    @property
    def tenants(self) -> list[Connection]:
        """The 4 tenant connections (one tenant's key)."""
        return self._tenants

    @property
    def workers(self) -> list[Connection]:
        return self._workers

    async def warm_up(self, jobs: int) -> None:
        """The server's pool fills, its statements are prepared, Python's caches are warm."""
        await enqueue_all(self._tenants, jobs // 10)
        await drain_single(self._workers)
        await enqueue_all(self._tenants, jobs)
        await drain_batched(self._workers)
        await enqueue_bursts(bursts(self._many, jobs))
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

    async def batched_drain(self, jobs: int, *, spread: bool = False) -> tuple[HttpRun, int]:
        """The run, and the server's peak RSS during it. `spread`: the backlog is MANY_TENANTS tenants', each
        enqueuing through its own key (see `bursts`); the same workers drain it with the same worker key."""
        await self._seed(jobs, spread=spread)
        self._server.reset_peak_rss()
        async with Phase(self._server, self._database, self._settle) as phase:
            done = await drain_batched(self._workers)
        what = f"batched drain across {MANY_TENANTS} tenants" if spread else "batched drain"
        return _checked(phase.run(done), jobs, what), self._server.peak_rss_bytes()

    async def _seed(self, jobs: int, *, spread: bool = False) -> None:
        """Pending jobs through the API, untimed, then the same VACUUM the raw baseline gets."""
        await self._database.reset_jobs()
        if spread:
            await enqueue_bursts(bursts(self._many, jobs))
        else:
            await enqueue_all(self._tenants, jobs)
        await self._database.vacuum()


def _checked(run: HttpRun, expected: int, what: str) -> HttpRun:
    if run.items != expected:
        raise RuntimeError(f"{what}: drained {run.items} of {expected} jobs")
    return run
