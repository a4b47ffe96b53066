"""A sequence drained by concurrent workers against a live server (issue 43): one sequence of N jobs enqueued over
HTTP (1,000-job batches, from one connection, in order), then drained by 8 workers at once, each on its own
keep-alive connection of the bench's light HTTP client (`bench.httpclient`, as the debounce burst's drain): a
long-polling `POST /v1/worker/lease` of up to 10 jobs, then `…/complete` for each job it got. Every worker records,
for each job, when it started (the lease's answer read) and when it ended (before its complete is sent): a server
that handed the next job out before the previous one's completion committed shows as an overlap.

- order violations: jobs that started before the previous job of the sequence (by id) ended, plus jobs that started
  before a job of a smaller id did (out of id order);
- overlaps: jobs that started while another job of the sequence was running (at most one may run at a time);
- jobs/s: jobs ÷ the drain's time (from the workers' start to the last completion).

The table's `started_at` is no cross-check: it is the time the lease request began, before its claim ran, so it
may precede the completion of the job before it that committed in between.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from dataclasses import dataclass

import msgspec

from bench.database import BenchDatabase
from bench.httpclient import Connection, close_all, connections
from bench.scenarios.http_throughput import ENQUEUE_BATCH
from bench.server import TENANT_KEY, WORKER_KEY, QueueFlowServer

QUEUE = "sequenced"
WORKERS = 8
LEASE_JOBS = 10
"""Each lease asks for up to this many: a claim that handed out two jobs of the sequence at once would show."""
KEY = "ledger-account-1"


@dataclass(frozen=True, slots=True)
class SequenceDrain:
    jobs: int
    drained: int
    """Jobs completed by the workers (all of them, or the drain failed)."""
    order_violations: int
    overlaps: int
    seconds: float
    """From the workers' start to the last completion."""
    enqueue_seconds: float
    per_worker: tuple[int, ...]
    """Jobs each worker ran: the sequence moves from worker to worker, as the wake-ups fall."""

    @property
    def rate(self) -> float:
        return self.drained / self.seconds


@dataclass(frozen=True, slots=True)
class Ran:
    job_id: str
    started: float
    ended: float


def violations(ran: list[Ran]) -> tuple[int, int]:
    """(order violations, overlaps) of one sequence's runs (`__doc__`)."""
    by_id = sorted(ran, key=lambda run: run.job_id)
    early = sum(later.started < earlier.ended for earlier, later in itertools.pairwise(by_id))
    by_start = sorted(ran, key=lambda run: (run.started, run.job_id))
    highest, out_of_order = "", 0
    for run in by_start:
        out_of_order += run.job_id < highest
        highest = max(highest, run.job_id)
    overlaps, last_end = 0, float("-inf")
    for run in by_start:
        overlaps += run.started < last_end
        last_end = max(last_end, run.ended)
    return early + out_of_order, overlaps


async def enqueue_sequence(tenant: Connection, jobs: int) -> None:
    """One sequence of `jobs` in order: each batch's ids increase in its order, and each batch after the last."""
    for start in range(0, jobs, ENQUEUE_BATCH):
        body = {
            "jobs": [
                {"task_name": "noop", "queue_name": QUEUE, "payload": {"n": n}, "sequence": {"key": KEY}}
                for n in range(start, min(jobs, start + ENQUEUE_BATCH))
            ]
        }
        await tenant.post("/v1/jobs/batch", body, 201, decode=False)


async def measure(server: QueueFlowServer, database: BenchDatabase, jobs: int) -> SequenceDrain:
    await database.reset_jobs()
    (tenant,) = await connections("127.0.0.1", server.port, TENANT_KEY, 1)
    workers = await connections("127.0.0.1", server.port, WORKER_KEY, WORKERS)
    try:
        began = time.perf_counter()
        await enqueue_sequence(tenant, jobs)
        enqueued = time.perf_counter() - began
        await database.vacuum()
        ran: list[Ran] = []
        counts = [0] * WORKERS
        done = asyncio.Event()
        lease = msgspec.json.encode(
            {"queues": [QUEUE], "max_jobs": LEASE_JOBS, "lease_seconds": 60, "wait_seconds": 0.5}
        )
        finished = time.perf_counter()

        async def worker(number: int, connection: Connection) -> None:
            nonlocal finished
            while not done.is_set():
                leased = (await connection.post("/v1/worker/lease", lease))["jobs"]
                started = time.perf_counter()
                for job in leased:
                    ended = time.perf_counter()  # a no-op task: it ends as it starts
                    ran.append(Ran(job["id"], started, ended))
                    await connection.post(
                        f"/v1/worker/jobs/{job['id']}/complete",
                        {"lease_token": job["lease_token"], "result": None},
                        decode=False,
                    )
                    counts[number] += 1
                if len(ran) >= jobs:
                    finished = time.perf_counter()
                    done.set()

        began = time.perf_counter()
        await asyncio.wait_for(asyncio.gather(*(worker(n, c) for n, c in enumerate(workers))), timeout=600)
        seconds = finished - began
    finally:
        await close_all([tenant, *workers])
    order, overlaps = violations(ran)
    completed = await database.db.fetchval(
        "SELECT count(*) FROM queueflow.jobs WHERE sequence_key = $1 AND status = 'completed'", KEY
    )
    if completed != jobs or len(ran) != jobs:
        raise RuntimeError(f"sequence drain: {len(ran)} runs, {completed} of {jobs} jobs completed")
    return SequenceDrain(jobs, len(ran), order, overlaps, seconds, enqueued, tuple(counts))


def describe(drain: SequenceDrain) -> str:
    return (
        f"a sequence of {drain.jobs:,} jobs, {WORKERS} workers: {drain.rate:,.0f} jobs/s ({drain.seconds:.1f} s;"
        f" enqueued in {drain.enqueue_seconds:.1f} s); order violations {drain.order_violations}, overlaps"
        f" {drain.overlaps}; jobs per worker"
        f" {', '.join(map(str, drain.per_worker))}"
    )


def main() -> None:
    """This scenario alone, on a server of its own: `python -m bench.scenarios.sequence_drain [--profile full]`."""
    from bench.profiles import Profile
    from bench.scenarios.alone import run_alone

    async def scenario(profile: Profile, args: argparse.Namespace, server: QueueFlowServer, db: BenchDatabase) -> str:
        return describe(await measure(server, db, args.jobs or profile.sequence_jobs))

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, help="default: the profile's")
    run_alone("sequence", parser, scenario)


if __name__ == "__main__":
    main()
