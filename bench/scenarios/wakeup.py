"""Wake-up latency of a parked long-poll lease: for a new job, and for a job that becomes due later (a delayed
job, a retried job), measured from its due time.

A new job: one lease parks (`wait_seconds`) on an empty queue, a tenant enqueues one job; the latency is from the
enqueue's answer (the job is committed) to the lease's answer. Both answers come from the same server, so a lease
may answer first: such a sample counts as 0 and is reported.

A job due later: leases park on queues of their own, then each queue gets a job due 0.3–0.8 s later; the latency is
from the job's `scheduled_at` (the server's clock, the same machine's as ours) to the lease's answer.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from datetime import datetime

import msgspec

from bench.httpclient import Connection, close_all, connections
from bench.server import TENANT_KEY, WORKER_KEY, QueueFlowServer

PARK = 0.03
"""How long a lease is given to park before the job arrives: no signal says it has."""
WARM_UP = 10
WAVE = 50
"""Leases parked at once for due-later jobs: the safety poll may take seconds, so samples are taken in waves."""


@dataclass(slots=True)
class Latencies:
    seconds: list[float] = field(default_factory=list)
    early: int = 0
    """New job: leases that answered before the enqueue did (counted as 0)."""
    missed: int = 0
    """Leases that came back empty at their wait deadline."""


async def _lease_at(connection: Connection, queue: str, wait: float) -> tuple[list[dict[str, object]], float]:
    """Lease one job with a long-poll; the answer and when it arrived (time.time(), to compare with the server)."""
    body = {"queues": [queue], "max_jobs": 1, "lease_seconds": 60, "wait_seconds": wait}
    answer = await connection.post("/v1/worker/lease", body)
    return answer["jobs"], time.time()


async def new_job(server: QueueFlowServer, samples: int) -> Latencies:
    tenant, worker = await connections("127.0.0.1", server.port, TENANT_KEY, 1) + await connections(
        "127.0.0.1", server.port, WORKER_KEY, 1
    )
    result = Latencies()
    job = msgspec.json.encode({"task_name": "noop", "queue_name": "wake"})
    try:
        for sample in range(-WARM_UP, samples):
            parked = asyncio.create_task(_lease_at(worker, "wake", 5))
            await asyncio.sleep(PARK)
            await tenant.post("/v1/jobs", job, 201, decode=False)
            committed = time.time()
            jobs, answered = await parked
            if sample < 0:
                continue
            if not jobs:
                result.missed += 1
                continue
            result.early += answered < committed
            result.seconds.append(max(0.0, answered - committed))
    finally:
        await close_all([tenant, worker])
    return result


async def due_later(server: QueueFlowServer, samples: int, *, retry: bool) -> Latencies:
    """Delayed jobs (`delay_seconds`), or with `retry` jobs failed with `retry_after_seconds`."""
    wave = min(WAVE, samples)
    tenant = (await connections("127.0.0.1", server.port, TENANT_KEY, 1))[0]
    workers = await connections("127.0.0.1", server.port, WORKER_KEY, wave + 1)
    result = Latencies()
    kind = "retry" if retry else "delay"
    try:
        for start in range(0, samples, wave):
            queues = [f"{kind}{start + i}" for i in range(min(wave, samples - start))]
            if retry:
                # The first delivery, taken at once, so that only the retry is left for the parked lease.
                for queue in queues:
                    await tenant.post("/v1/jobs", {"task_name": "noop", "queue_name": queue}, 201, decode=False)
                first = [(await _lease_at(workers[-1], queue, 0))[0][0] for queue in queues]
            parked = [asyncio.create_task(_lease_at(workers[i], queue, 15)) for i, queue in enumerate(queues)]
            await asyncio.sleep(PARK * 3)
            due: list[float] = []
            for i, queue in enumerate(queues):
                after = 0.3 + random.random() / 2
                if retry:
                    job = first[i]
                    body = {
                        "lease_token": job["lease_token"],
                        "error": "again",
                        "retryable": True,
                        "retry_after_seconds": after,
                    }
                    answer = await workers[-1].post(f"/v1/worker/jobs/{job['id']}/fail", body)
                else:
                    body = {"task_name": "noop", "queue_name": queue, "delay_seconds": after}
                    answer = await tenant.post("/v1/jobs", body, 201)
                due.append(datetime.fromisoformat(answer["scheduled_at"]).timestamp())
            for task, due_at in zip(parked, due, strict=True):
                jobs, answered = await task
                if jobs:
                    result.seconds.append(max(0.0, answered - due_at))
                else:
                    result.missed += 1
    finally:
        await close_all([tenant, *workers])
    return result
