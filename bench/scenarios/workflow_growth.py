"""Workflows that grow and wait (issue 31's targets), against the workflow scenarios' server (`serve --mode all`,
the in-process runner on the no-op task):

- **adding steps ÷ creating them**: one `POST /v1/worker/jobs/{id}/steps` adding N independent steps, against one
  `POST /v1/workflows` creating a workflow of the same N steps, in alternating pairs; each request's time and the
  server's CPU over it. The steps are of a task the in-process runner does not have, on a queue of their own, so
  nothing runs them (each pair's workflows are cancelled after it); the adder is a step leased with the worker key.
- **adding to a large workflow ÷ to a small one**: 10 steps added to a workflow of `large` steps, against 10 added to
  one of 10 steps, in alternating pairs: an addition should cost what it adds, not what the workflow holds.
- **signal → next step**: workflows `a → wait(signal) → b`, every one waiting; one signal at a time, each sent while
  the runner is parked; from the signal request's sending (our clock) to `b`'s job `started_at` (the server's, the
  same machine's). Measured from the sending, not from the answer as the issue words its target: `b`'s step is
  enqueued within the request, so `b` usually starts before the answer reaches us, and from the answer every sample
  read 0 — the stricter figure says how long the whole path takes.
- **a `seconds` wait's lateness**: workflows `wait(seconds=1) → b`, all created at once; from each wait's `due_at`
  (in the creation's answer) to `b`'s job `created_at` (enqueued when the wait ended), both the server's clock.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime

import msgspec

from bench.database import BenchDatabase
from bench.httpclient import Connection, close_all, connections
from bench.scenarios.wakeup import Latencies
from bench.server import TENANT_KEY, WORKER_KEY, QueueFlowServer

QUEUE = "bench-grow"
"""The added and created steps' queue: the in-process runner serves `default` only."""
TASK = "grow-bench"
"""A task the in-process runner does not have: nothing runs the steps measured."""
ADDED_TO_LARGE = 10
SLEEP_SECONDS = 1.0
POLL = 0.002
B_STARTED = """
SELECT j.started_at FROM queueflow.workflow_steps s JOIN queueflow.jobs j ON j.id = s.job_id
 WHERE s.workflow_id = $1 AND s.name = 'b' AND j.started_at IS NOT NULL
"""
WAITING = "SELECT count(*) FROM queueflow.workflow_steps WHERE workflow_id = ANY($1::text[]) AND status = 'waiting'"
B_ENQUEUED = """
SELECT s.workflow_id, j.created_at FROM queueflow.workflow_steps s JOIN queueflow.jobs j ON j.id = s.job_id
 WHERE s.workflow_id = ANY($1::text[]) AND s.name = 'b'
"""


@dataclass(slots=True)
class Timed:
    """One request's wall time and the server's CPU over it, in seconds."""

    seconds: float
    cpu: float


@dataclass(slots=True)
class Pairs:
    """Alternating A/B measurements: `value[i]` beside `baseline[i]`."""

    value: dict[int, Timed] = field(default_factory=dict)
    baseline: dict[int, Timed] = field(default_factory=dict)


def _steps(count: int, prefix: str, depends_on: list[str] | None = None) -> list[dict[str, object]]:
    return [
        {"name": f"{prefix}{n}", "task_name": TASK, "queue_name": QUEUE, "depends_on": depends_on or []}
        for n in range(count)
    ]


class GrowthBench:
    def __init__(self, server: QueueFlowServer, database: BenchDatabase) -> None:
        self.server, self.database = server, database
        self.tenant: Connection | None = None
        self.worker: Connection | None = None

    async def __aenter__(self) -> GrowthBench:
        self.tenant = (await connections("127.0.0.1", self.server.port, TENANT_KEY, 1))[0]
        self.worker = (await connections("127.0.0.1", self.server.port, WORKER_KEY, 1))[0]
        return self

    async def __aexit__(self, *_: object) -> None:
        await close_all([c for c in (self.tenant, self.worker) if c is not None])

    async def _timed(self, connection: Connection, path: str, body: bytes, expect: int) -> tuple[Timed, bytes]:
        cpu = self.server.cpu_seconds()
        began = time.perf_counter()
        status, answer = await connection.request("POST", path, body)
        seconds = time.perf_counter() - began
        if status != expect:
            raise RuntimeError(f"POST {path}: {status} {answer[:500]!r}")
        return Timed(seconds, self.server.cpu_seconds() - cpu), answer

    async def _create(self, steps: list[dict[str, object]]) -> tuple[str, Timed]:
        assert self.tenant is not None
        body = msgspec.json.encode({"name": "grow-bench", "steps": steps})
        timed, answer = await self._timed(self.tenant, "/v1/workflows", body, 201)
        return msgspec.json.decode(answer)["id"], timed

    async def _adder(self, steps: list[dict[str, object]]) -> tuple[str, str, str]:
        """A workflow whose step `root` (plus `steps`) is leased: (workflow id, root's job id, lease token)."""
        assert self.worker is not None
        workflow_id, _ = await self._create([{"name": "root", "task_name": TASK, "queue_name": QUEUE}, *steps])
        lease = {"queues": [QUEUE], "max_jobs": 1, "lease_seconds": 600}
        jobs = (await self.worker.post("/v1/worker/lease", lease))["jobs"]
        if len(jobs) != 1 or jobs[0]["workflow_id"] != workflow_id:
            raise RuntimeError(f"leased {jobs!r}, not the root of workflow {workflow_id}")
        return workflow_id, jobs[0]["id"], jobs[0]["lease_token"]

    async def _add(self, job_id: str, token: str, steps: list[dict[str, object]]) -> Timed:
        assert self.worker is not None
        body = msgspec.json.encode({"lease_token": token, "steps": steps})
        timed, _ = await self._timed(self.worker, f"/v1/worker/jobs/{job_id}/steps", body, 201)
        return timed

    async def _cancel(self, *ids: str) -> None:
        assert self.tenant is not None
        for workflow_id in ids:
            await self.tenant.post(f"/v1/workflows/{workflow_id}/cancel", b"{}")

    async def add_versus_create(self, size: int, pairs: int) -> Pairs:
        """`pairs` (after one unmeasured): adding `size` steps in one call, creating a `size`-step workflow."""
        result = Pairs()
        for pair in range(-1, pairs):
            workflow_id, job_id, token = await self._adder([])
            added = await self._add(job_id, token, _steps(size, "m"))
            created_id, created = await self._create(_steps(size, "m"))
            await self._cancel(workflow_id, created_id)
            if pair >= 0:
                result.value[pair], result.baseline[pair] = added, created
        return result

    async def add_to_large(self, large: int, pairs: int) -> Pairs:
        """`pairs` (after one unmeasured): ADDED_TO_LARGE steps added to a workflow of `large` steps, and to one of
        10. The other steps wait for `root` (pending: nothing is enqueued for them)."""
        big = await self._adder(_steps(large - 1, "old", ["root"]))
        small = await self._adder(_steps(9, "old", ["root"]))
        result = Pairs()
        for pair in range(-1, pairs):
            batch = _steps(ADDED_TO_LARGE, f"new{pair + 1}-")
            to_large = await self._add(big[1], big[2], batch)
            to_small = await self._add(small[1], small[2], batch)
            if pair >= 0:
                result.value[pair], result.baseline[pair] = to_large, to_small
        await self._cancel(big[0], small[0])
        return result

    async def signal_to_next_step(self, samples: int) -> Latencies:
        assert self.tenant is not None
        steps = [
            {"name": "a", "task_name": "noop"},
            {"name": "w", "depends_on": ["a"], "wait": {"signal": "go", "timeout_seconds": 3600}},
            {"name": "b", "task_name": "noop", "depends_on": ["w"]},
        ]
        body = msgspec.json.encode({"name": "signal-bench", "steps": steps})
        ids = [(await self.tenant.post("/v1/workflows", body, 201))["id"] for _ in range(samples)]
        deadline = time.monotonic() + 120
        while await self.database.db.fetchval(WAITING, ids) < samples:
            if time.monotonic() > deadline:
                raise RuntimeError("signal → next step: the workflows' waits never all became waiting")
            await asyncio.sleep(0.05)
        result = Latencies()
        for workflow_id in ids:
            await asyncio.sleep(0.02)  # the runner parks again after the last sample's b
            sent = time.time()
            await self.tenant.post(f"/v1/workflows/{workflow_id}/signals/go", b'{"payload": {"ok": true}}')
            started = await self._started(workflow_id, time.monotonic() + 10)
            if started is None:
                result.missed += 1
                continue
            result.seconds.append(max(0.0, started.timestamp() - sent))
        return result

    async def _started(self, workflow_id: str, deadline: float) -> datetime | None:
        while time.monotonic() < deadline:
            started: datetime | None = await self.database.db.fetchval(B_STARTED, workflow_id)
            if started is not None:
                return started
            await asyncio.sleep(POLL)
        return None

    async def sleep_lateness(self, samples: int) -> Latencies:
        """`samples` workflows `wait(seconds=1) → b` created at once: from each wait's due time to `b`'s enqueue."""
        assert self.tenant is not None
        steps = [
            {"name": "w", "wait": {"seconds": SLEEP_SECONDS}},
            {"name": "b", "task_name": "noop", "depends_on": ["w"]},
        ]
        body = msgspec.json.encode({"name": "sleep-bench", "steps": steps})
        due: dict[str, datetime] = {}
        for _ in range(samples):
            created = await self.tenant.post("/v1/workflows", body, 201)
            wait = next(step for step in created["steps"] if step["name"] == "w")
            due[created["id"]] = datetime.fromisoformat(wait["due_at"])
        result = Latencies()
        enqueued: dict[str, datetime] = {}
        deadline = time.monotonic() + SLEEP_SECONDS + 60
        while len(enqueued) < samples and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            rows = await self.database.db.fetch(B_ENQUEUED, list(due))
            enqueued = {row["workflow_id"]: row["created_at"] for row in rows}
        for workflow_id, due_at in due.items():
            if workflow_id not in enqueued:
                result.missed += 1
                continue
            result.seconds.append(max(0.0, (enqueued[workflow_id] - due_at).total_seconds()))
        return result
