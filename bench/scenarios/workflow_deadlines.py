"""Workflows that end on time (issue 44's target), against the workflow scenarios' server (`serve --mode all`, whose
wait timer ends running workflows past their deadline): `samples` workflows created at once, each with
`timeout_seconds` 1 and two steps that never finish on their own (a job on a queue nothing drains, and a wait for a
signal nobody sends); from each workflow's `deadline` (in the creation's answer, the server's clock) to when this
process first reads it ended `failed` (its clock: the same machine's), polling every POLL. Not to its `completed_at`:
the timer stamps every workflow it ends in one pass with the pass's start, so a pass that ends 200 of them one by
one would hide how long the last one waited."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

import msgspec

from bench.database import BenchDatabase
from bench.httpclient import connections
from bench.scenarios.wakeup import Latencies
from bench.server import TENANT_KEY, QueueFlowServer

TIMEOUT_SECONDS = 1
"""The shortest deadline a workflow takes: its lateness is then the timer's, not the wait's."""
QUEUE = "bench-deadlines"
"""A queue nothing drains: the job step stays enqueued until its workflow times out and cancels it."""
CLIENTS = 4
POLL = 0.02
ENDED = "SELECT id, status FROM queueflow.workflows WHERE id = ANY($1::text[]) AND status <> 'running'"
BODY = msgspec.json.encode(
    {
        "name": "deadline-bench",
        "timeout_seconds": TIMEOUT_SECONDS,
        "steps": [
            {"name": "job", "task_name": "deadline-bench", "queue_name": QUEUE},
            {"name": "wait", "wait": {"signal": "never", "timeout_seconds": 3600}},
        ],
    }
)


async def deadline_lateness(server: QueueFlowServer, database: BenchDatabase, samples: int) -> Latencies:
    """The workflows' lateness after their deadline; a workflow that did not end `failed` within a minute of its
    deadline is `missed`, and one that ended otherwise is an error."""
    clients = await connections("127.0.0.1", server.port, TENANT_KEY, CLIENTS)
    deadlines: dict[str, datetime] = {}
    try:

        async def create(client_number: int) -> None:
            for _ in range(client_number, samples, CLIENTS):
                created = await clients[client_number].post("/v1/workflows", BODY, 201)
                deadlines[created["id"]] = datetime.fromisoformat(created["deadline"])

        await asyncio.gather(*(create(n) for n in range(min(CLIENTS, samples))))
    finally:
        for client in clients:
            await client.close()
    ended: dict[str, float] = {}
    bound = time.monotonic() + TIMEOUT_SECONDS + 60
    while len(ended) < samples and time.monotonic() < bound:
        await asyncio.sleep(POLL)
        rows = await database.db.fetch(ENDED, [key for key in deadlines if key not in ended])
        seen = time.time()
        for row in rows:
            if row["status"] != "failed":
                raise RuntimeError(f"workflow {row['id']} ended {row['status']}, not failed by its deadline")
            ended[row["id"]] = seen
    result = Latencies()
    for workflow_id, deadline in deadlines.items():
        if workflow_id not in ended:
            result.missed += 1
            continue
        result.seconds.append(max(0.0, ended[workflow_id] - deadline.timestamp()))
    return result
