"""The `push_kills` scenario: push delivery while its servers are SIGKILLed mid-request and its receiver restarts.

Two `queueflow serve --mode worker --allow-private-endpoints` processes push one endpoint's jobs (concurrency
CONCURRENCY across both) to a receiver that takes WORK_SECONDS a request (`tests.delivery.receiver`: it records
every delivery and counts the requests in flight). Jobs are enqueued at an even pace; every `fault_every` seconds
one of the servers is SIGKILLed (requests in flight, answers unrecorded) and started again, or, every other fault,
the receiver is stopped and started again on its port. Each fault notes the jobs running (leased by a pusher) as it
struck: only those may be delivered twice.

Invariants: every job completed (nothing lost, none stuck); every job reached the receiver; no job reached it
twice unless it was in flight at a fault (so none was completed twice by the endpoint's work); the receiver never
had more than CONCURRENCY requests in flight, the dead servers' included (their slots are held until their hold
ends, as their leases are).
"""

from __future__ import annotations

import asyncio
import random
import subprocess
import time
from collections import Counter
from collections.abc import Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

import asyncpg
from queueflow.core.endpoints import NewEndpoint
from queueflow.core.types import BackoffPolicy, BackoffStrategy, NewJob
from queueflow.engine import Engine
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres import schema as pgschema

from tests.chaos import cluster
from tests.chaos.checks import Outcome
from tests.delivery.conftest import engine_on
from tests.delivery.live import pushing_server
from tests.delivery.receiver import Receiver, receiving
from tests.moments import T

CONCURRENCY = 10
SERVERS = 2
WORK_SECONDS = 0.2
"""Each request's time at the receiver: at CONCURRENCY 10 the endpoint takes 50 jobs/s, less than the full profile's
load, so requests are in flight whenever a fault strikes."""
TIMEOUT_SECONDS = 1
"""The endpoint's request bound: a dead server's jobs and slots are held for it plus the pusher's 5 s grace."""
RECEIVER_DOWN = 0.5
"""How long the receiver stays stopped before it starts again on its port."""
RETRIES = 50
"""Each job's retries: deliveries refused while the receiver is down, and leases that expire with a dead server,
each consume one; none of the jobs should run out."""
BACKOFF = BackoffPolicy(strategy=BackoffStrategy.FIXED, base_seconds=0.2, max_seconds=0.2, jitter=False)
SETTLE_FOR = 120.0
BATCH = 50


@dataclass
class Tally:
    """What the receivers saw, across restarts, and what was in flight at each fault."""

    arrivals: Counter[str] = field(default_factory=Counter)
    peak: int = 0
    exposed: set[str] = field(default_factory=set)
    """Jobs running (leased by a pusher) when a fault struck: the only ones that may be delivered twice."""
    faults: int = 0

    def take(self, receiver: Receiver) -> None:
        self.arrivals.update(delivery.headers["queueflow-job-id"] for delivery in receiver.deliveries)
        self.peak = max(self.peak, receiver.peak)


def judge(out: Outcome, jobs: Iterable[str], statuses: dict[str, str], tally: Tally, concurrency: int) -> Outcome:
    """The invariants, from the jobs enqueued, their statuses once settled, and what the receivers saw."""
    enqueued = set(jobs)
    out.enqueued = len(enqueued)
    out.completed = sum(statuses.get(job) == "completed" for job in enqueued)
    out.dead_lettered = sum(statuses.get(job) == "dead_letter" for job in enqueued)
    out.lost = len(enqueued - tally.arrivals.keys()) + sum(job not in statuses for job in enqueued)
    out.stuck = sum(statuses.get(job) in ("pending", "running", "retrying") for job in enqueued)
    out.executions = sum(tally.arrivals.values())
    out.duplicate_executions = sum(count - 1 for count in tally.arrivals.values())
    twice = {job for job, count in tally.arrivals.items() if count > 1}
    out.duplicate_completions = len(twice - tally.exposed)
    out.faults = tally.faults
    out.require(out.completed == len(enqueued), f"{len(enqueued) - out.completed} jobs not completed")
    out.require(not out.lost, f"{out.lost} jobs lost (never delivered, or gone)")
    out.require(not out.stuck, f"{out.stuck} jobs stuck unfinished")
    out.require(not out.duplicate_completions, f"{out.duplicate_completions} jobs delivered twice, none in flight")
    out.require(not tally.arrivals.keys() - enqueued, "deliveries of jobs never enqueued")
    out.require(bool(tally.exposed), "no fault struck while a delivery was in flight: nothing was tested")
    out.require(tally.peak <= concurrency, f"{tally.peak} requests in flight at the receiver, over {concurrency}")
    out.notes.append(
        f"receiver peak in flight {tally.peak} (the endpoint's concurrency {concurrency}); {len(tally.exposed)} jobs"
        f" in flight at the faults, {len(twice)} of them delivered twice"
    )
    return out


async def run(jobs: int, load_seconds: float, fault_every: float, *, seed: int = 1) -> Outcome:
    """`jobs` enqueued over `load_seconds`, a fault every `fault_every` seconds until half as long again after."""
    rng = random.Random(seed)
    tally = Tally()
    async with AsyncExitStack() as stack:
        url = await cluster.create_database()
        stack.push_async_callback(cluster.drop_database, url)
        await asyncio.to_thread(pgschema.upgrade, url)
        store = await stack.enter_async_context(PostgresJobStore.from_url(url, pool_size=2))
        engine = engine_on(store)
        port = cluster.free_port()
        receivers = AsyncExitStack()
        stack.push_async_callback(receivers.aclose)
        receiver = await receivers.enter_async_context(receiving(port=port))
        receiver.work_seconds = WORK_SECONDS
        await engine.endpoints.create(
            T,
            NewEndpoint(name="chaos", url=receiver.url, concurrency=CONCURRENCY, timeout_seconds=TIMEOUT_SECONDS),
        )
        servers = [pushing_server(url) for _ in range(SERVERS)]
        stack.callback(_kill_all, servers)
        began = time.monotonic()
        enqueued: list[str] = []
        loading = asyncio.create_task(_load(engine, jobs, load_seconds, enqueued))
        until = None
        while until is None or time.monotonic() < until:
            await asyncio.sleep(fault_every)  # the cadence of the faults
            tally.faults += 1
            if tally.faults % 2:
                n = rng.randrange(SERVERS)
                servers[n].kill()
                await asyncio.to_thread(servers[n].wait)
                tally.exposed |= await _running(url)
                servers[n] = pushing_server(url)
            else:
                tally.exposed |= await _running(url)
                await receivers.aclose()  # uvicorn answers what it holds, then closes
                tally.take(receiver)
                tally.exposed |= await _running(url)
                await asyncio.sleep(RECEIVER_DOWN)  # the outage we inject
                receiver = await receivers.enter_async_context(receiving(port=port))
                receiver.work_seconds = WORK_SECONDS
            if loading.done() and until is None:
                until = time.monotonic() + load_seconds / 2
        await loading
        statuses = await _settle(url, enqueued)
        took = time.monotonic() - began
        tally.take(receiver)
        out = judge(Outcome("push_kills"), enqueued, statuses, tally, CONCURRENCY)
        out.workers = f"push: {SERVERS} servers → 1 endpoint"
        out.throughput = out.completed / took
        out.phases = {"load, faults and settling": took}
        return out
    raise AssertionError("unreachable")


async def _load(engine: Engine, jobs: int, seconds: float, enqueued: list[str]) -> None:
    """Enqueue `jobs` in batches at an even pace over `seconds`, so that the faults land while work flows."""
    batches = range(0, jobs, BATCH)
    job = NewJob(task_name="push", max_retries=RETRIES, backoff=BACKOFF)
    for start in batches:
        made = await engine.enqueue_many(T, [job] * min(BATCH, jobs - start))
        enqueued.extend(each.job.id for each in made)
        await asyncio.sleep(seconds / len(batches))  # the pace of the load, not a wait for a condition


async def _running(url: str) -> set[str]:
    connection = await asyncpg.connect(url)
    try:
        rows = await connection.fetch("SELECT id FROM queueflow.jobs WHERE status = 'running'")
    finally:
        await connection.close()
    return {row["id"] for row in rows}


async def _settle(url: str, jobs: list[str]) -> dict[str, str]:
    """Each job's status once none is unfinished (or SETTLE_FOR has passed). The servers announce nothing we could
    wait on, so this polls the database."""
    deadline = time.monotonic() + SETTLE_FOR
    connection = await asyncpg.connect(url)
    try:
        while True:
            rows = await connection.fetch("SELECT id, status FROM queueflow.jobs WHERE id = ANY($1)", jobs)
            statuses = {row["id"]: row["status"] for row in rows}
            unfinished = sum(status in ("pending", "running", "retrying") for status in statuses.values())
            if not unfinished or time.monotonic() > deadline:
                return statuses
            await asyncio.sleep(0.5)
    finally:
        await connection.close()


def _kill_all(servers: list[subprocess.Popen[bytes]]) -> None:
    for server in servers:
        server.kill()
        server.wait()
