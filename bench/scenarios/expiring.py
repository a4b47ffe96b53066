"""Jobs expiring under load against a live server (issue 43, deadlines): N jobs with `expires_in_seconds`, enqueued
in batches at a steady pace while workers that take jobs more slowly than they arrive lease and complete them, so
that a backlog outlives many deadlines. The workers are the bench's light HTTP client (`bench.httpclient`), each
leasing 20 jobs every 0.2 s (`max_jobs` 20, no long-poll) and completing them in one ack.

Once every deadline has passed the workers stop, and the bench waits (polling the table) until no job is left
unfinished, then reads every job back from the API (`GET /v1/jobs?queue_name=`, 500 a page).

- leased after the deadline: jobs whose lease answer carries a `started_at` at or after its `expires_at` (the
  server's own times), and by the jobs read back from the API afterwards, every job whose `started_at` is — both
  must be 0;
- dead-lettered after the deadline: for each job that expired (`dead_letter`, `expired: …`), its `completed_at` —
  the finish time the API shows, the expiry pass's time — less its `expires_at`; p50, p99 and max (target: p99 ≤ 1 s).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from bench import stats
from bench.database import BenchDatabase
from bench.httpclient import Connection, close_all, connections
from bench.profiles import Profile
from bench.server import TENANT_KEY, WORKER_KEY, QueueFlowServer

QUEUE = "expiring"
LESSEES = 4
LEASE_JOBS = 20
LEASE_EVERY = 0.2
"""Each worker's pace: 4 × 20 jobs every 0.2 s is at most 400 jobs/s, slower than the enqueues."""
SETTLE_FOR = 60.0
"""How long, once every deadline has passed, the jobs left unstarted have to be dead-lettered before the run fails."""
PAGE = 500


@dataclass(frozen=True, slots=True)
class Expiring:
    jobs: int
    leased: int
    leased_late: int
    """By the lease answers: jobs handed out at or after their deadline."""
    started_late: int
    """By the jobs read back: a `started_at` at or after `expires_at`."""
    completed: int
    expired: int
    other: int
    """Jobs neither completed nor expired once every deadline has passed (must be 0)."""
    lateness: tuple[float, ...]
    """Seconds from each expired job's deadline to its `completed_at`."""
    enqueue_seconds: float

    @property
    def late(self) -> int:
        return self.leased_late + self.started_late


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value)


async def measure(
    server: QueueFlowServer,
    database: BenchDatabase,
    jobs: int,
    *,
    batches: int,
    batch_every: float,
    deadlines: tuple[float, float],
    seed: int = 1,
) -> Expiring:
    await database.reset_jobs()
    tenants = await connections("127.0.0.1", server.port, TENANT_KEY, 1)
    workers = await connections("127.0.0.1", server.port, WORKER_KEY, LESSEES)
    rng = random.Random(seed)
    leased, late = 0, 0
    stop = asyncio.Event()
    lease = msgspec.json.encode({"queues": [QUEUE], "max_jobs": LEASE_JOBS, "lease_seconds": 60, "wait_seconds": 0})

    async def lessee(connection: Connection) -> None:
        nonlocal leased, late
        while not stop.is_set():
            taken: list[dict[str, Any]] = (await connection.post("/v1/worker/lease", lease))["jobs"]
            leased += len(taken)
            late += sum(_at(job["started_at"]) >= _at(job["expires_at"]) for job in taken)
            if taken:
                done = [{"id": job["id"], "lease_token": job["lease_token"], "result": None} for job in taken]
                await connection.post("/v1/worker/ack", {"complete": done}, decode=False)
            await asyncio.sleep(LEASE_EVERY)  # the workers' pace (slower than the enqueues), not a wait

    try:
        running = [asyncio.create_task(lessee(connection)) for connection in workers]
        began = time.perf_counter()
        per_batch = -(-jobs // batches)
        for start in range(0, jobs, per_batch):
            items = [
                {"task_name": "noop", "queue_name": QUEUE, "expires_in_seconds": rng.uniform(*deadlines)}
                for _ in range(min(per_batch, jobs - start))
            ]
            await tenants[0].post("/v1/jobs/batch", {"jobs": items}, 201, decode=False)
            await asyncio.sleep(batch_every)  # the enqueues' pace
        enqueued = time.perf_counter() - began
        # A bench, not a test: every deadline passes (nothing is leased after that), then the jobs left unstarted
        # are dead-lettered by the server, which announces nothing the bench could wait on: polled.
        await asyncio.sleep(deadlines[1])
        stop.set()
        await asyncio.gather(*running)
        settled = time.perf_counter() + SETTLE_FOR
        while await database.count(f"queue_name = '{QUEUE}' AND status IN ('pending', 'retrying', 'running')"):
            if time.perf_counter() > settled:
                raise RuntimeError(f"expiring jobs: some still unfinished {SETTLE_FOR:.0f} s after every deadline")
            await asyncio.sleep(0.05)
        rows: list[dict[str, Any]] = []
        cursor = ""
        while True:
            page = await tenants[0].get(f"/v1/jobs?queue_name={QUEUE}&limit={PAGE}{cursor}")
            rows += page["items"]
            if not page["next_cursor"]:
                break
            cursor = f"&cursor={page['next_cursor']}"
    finally:
        await close_all([*tenants, *workers])
    expired = [
        row for row in rows if row["status"] == "dead_letter" and (row["error_message"] or "").startswith("expired")
    ]
    completed = sum(row["status"] == "completed" for row in rows)
    started_late = sum(
        row["started_at"] is not None and _at(row["started_at"]) >= _at(row["expires_at"]) for row in rows
    )
    lateness = tuple((_at(row["completed_at"]) - _at(row["expires_at"])).total_seconds() for row in expired)
    if len(rows) != jobs:
        raise RuntimeError(f"expiring jobs: read back {len(rows)} of {jobs}")
    return Expiring(
        jobs, leased, late, started_late, completed, len(expired), jobs - completed - len(expired), lateness, enqueued
    )


def describe(run: Expiring) -> str:
    spread = (
        f"p50 {stats.percentile(run.lateness, 50):.3f} s, p99 {stats.percentile(run.lateness, 99):.3f} s,"
        f" max {max(run.lateness):.3f} s"
        if run.lateness
        else "none expired"
    )
    return (
        f"{run.jobs:,} jobs with deadlines (enqueued over {run.enqueue_seconds:.1f} s, {LESSEES} workers taking"
        f" {LEASE_JOBS} every {LEASE_EVERY:g} s): {run.leased:,} leased, {run.leased_late} of them at or after"
        f" their deadline ({run.started_late} by the jobs read back); {run.completed:,} completed, {run.expired:,}"
        f" expired, {run.other} neither; dead-lettered after the deadline: {spread}"
    )


def main() -> None:
    """This scenario alone, on a server of its own: `python -m bench.scenarios.expiring [--profile full]`."""
    from bench.scenarios.alone import run_alone

    async def scenario(profile: Profile, _: argparse.Namespace, server: QueueFlowServer, db: BenchDatabase) -> str:
        return describe(await expiring_run(profile, server, db))

    run_alone("expiring", argparse.ArgumentParser(description=__doc__.split("\n\n")[0]), scenario)


async def expiring_run(profile: Profile, server: QueueFlowServer, database: BenchDatabase) -> Expiring:
    """`measure` at `profile`'s size (`bench.profiles.Profile`)."""
    return await measure(
        server,
        database,
        profile.expiring_jobs,
        batches=profile.expiring_batches,
        batch_every=profile.expiring_batch_every,
        deadlines=profile.expiring_deadlines,
    )


if __name__ == "__main__":
    main()
