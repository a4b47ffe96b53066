"""Workflows at scale, QueueFlow's side: many small workflows, fan-outs 1 → W → 1, long chains, and a delayed job
taken by the in-process runner — against one `queueflow serve --mode all --tasks bench.drivers.noop:tasks
--task-concurrency 10` process (the in-process runner, as a user of workflows runs it).

A run creates its workflows through the API (one `POST /v1/workflows` each, on 4 connections) and the clock runs
from the first request until no workflow of the run is `running` (read from the database every 5 ms by primary key,
as the worker drains read theirs). Each run also records the server's CPU time (utime + stime) and the
steps the janitor healed meanwhile (its log line "healed N workflow steps"). DBOS runs the same shapes
(bench/peers/dbos_run.py). Before each run, its side's database is vacuumed (`BenchDatabase.vacuum_all`), so
that no shape measures the dead rows of the one before it.

A shape over the server's step limit is answered 400 at creation: `NotRun`, reported as "not run", as is a run
past its time bound (its workflows are cancelled, so that they do not weigh on what runs next).
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import msgspec

from bench.database import BenchDatabase
from bench.httpclient import Connection, HttpError, close_all, connections
from bench.scenarios.wakeup import Latencies
from bench.server import TENANT_KEY, QueueFlowServer

TASKS = "bench.drivers.noop:tasks"
CONCURRENCY = 10
"""Steps run at once: QueueFlow's in-process runner (`--task-concurrency`), DBOS's queue (`worker_concurrency`)."""
SMALL_CHAIN = 3
CHILD_CHAIN = 10
"""The chain each child workflow of the "children" shape runs."""
"""Steps in each of the many small workflows."""
CLIENTS = 4
POLL = 0.005
STILL_RUNNING = "SELECT status = 'running' FROM queueflow.workflows WHERE id = $1"
NEWEST_RUNNING = """
SELECT id FROM queueflow.workflows WHERE id = ANY($1::text[]) AND status = 'running' ORDER BY id DESC LIMIT 1
"""
HEALED = re.compile(rb"healed (\d+) workflow steps")


@dataclass(frozen=True, slots=True)
class Shape:
    """One workflow scenario: `kind` "workflows" (`size` workflows of SMALL_CHAIN steps each), "fan-out"
    (1 → `size` → 1), "chain" (`size` steps one after the other) or "children" (a parent of `size` child-workflow
    steps, each child a chain of CHILD_CHAIN steps)."""

    kind: str
    size: int

    @property
    def steps(self) -> int:
        """Steps run in all, on either side."""
        return {
            "workflows": self.size * SMALL_CHAIN,
            "fan-out": self.size + 2,
            "chain": self.size,
            "children": self.size * CHILD_CHAIN,
        }[self.kind]

    def __str__(self) -> str:
        if self.kind == "workflows":
            return f"{self.size:,} workflows × a {SMALL_CHAIN}-step chain"
        if self.kind == "fan-out":
            return f"fan-out 1 → {self.size:,} → 1"
        if self.kind == "children":
            return f"a parent of {self.size:,} child workflows × a {CHILD_CHAIN}-step chain"
        return f"{self.size:,}-step chain"

    def workflows(self) -> list[list[dict[str, object]]]:
        """The steps of each workflow to create (no-op tasks; a step's name says its place)."""
        if self.kind == "workflows":
            return [_chain(SMALL_CHAIN) for _ in range(self.size)]
        if self.kind == "chain":
            return [_chain(self.size)]
        if self.kind == "children":
            child = {"name": "child", "steps": _chain(CHILD_CHAIN)}
            return [[{"name": f"c{n}", "workflow": child} for n in range(self.size)]]
        fan = [{"name": f"f{n}", "task_name": "noop", "depends_on": ["root"]} for n in range(self.size)]
        join = {"name": "join", "task_name": "noop", "depends_on": [step["name"] for step in fan]}
        return [[{"name": "root", "task_name": "noop"}, *fan, join]]


def _chain(length: int) -> list[dict[str, object]]:
    return [{"name": f"s{n}", "task_name": "noop", "depends_on": [f"s{n - 1}"] if n else []} for n in range(length)]


@dataclass(frozen=True, slots=True)
class WorkflowRun:
    shape: Shape
    side: str
    """"QueueFlow" or a peer's name."""
    seconds: float
    repetition: int = 0
    server_cpu: float | None = None
    """QueueFlow's server process, CPU seconds over the run (None for a peer)."""
    healed: int = 0
    """Workflow steps the janitor healed during the run (none is the target: nothing was missed)."""

    @property
    def steps_per_second(self) -> float:
        return self.shape.steps / self.seconds

    @property
    def ms_per_step(self) -> float:
        return self.seconds / self.shape.steps * 1000

    @property
    def cpu_ms_per_step(self) -> float | None:
        return None if self.server_cpu is None else self.server_cpu / self.shape.steps * 1000


class NotRun(RuntimeError):
    """A shape this side could not run: over the server's step or body limit, or over its time bound."""


class ServerLog:
    """The server's log file read from where the last read stopped: what the janitor logged since."""

    def __init__(self, path: Path) -> None:
        self.path, self._offset = path, 0
        self.healed_total = 0
        """Every step healed in the log so far."""

    def healed(self) -> int:
        with self.path.open("rb") as log:
            log.seek(self._offset)
            text = log.read()
            self._offset = log.tell()
        healed = sum(int(count) for count in HEALED.findall(text))
        self.healed_total += healed
        return healed


class QueueFlowWorkflows:
    """The workflow scenarios' QueueFlow side: one server (in-process runner), one database, open connections."""

    def __init__(self, server: QueueFlowServer, database: BenchDatabase) -> None:
        self.server, self.database = server, database
        self.log = ServerLog(server.log_path)
        self._clients: list[Connection] = []

    async def open(self) -> QueueFlowWorkflows:
        self._clients = await connections("127.0.0.1", self.server.port, TENANT_KEY, CLIENTS)
        return self

    async def close(self) -> None:
        await close_all(self._clients)

    async def run(self, shape: Shape, bound: float) -> WorkflowRun:
        """Create `shape`'s workflows, wait until none is running; NotRun if the server refuses them or they take
        longer than `bound` seconds."""
        bodies = [msgspec.json.encode({"name": shape.kind, "steps": steps}) for steps in shape.workflows()]
        self.log.healed()  # what was logged before this run is not this run's
        cpu = self.server.cpu_seconds()
        began = time.perf_counter()
        ids = await self._create(bodies)
        try:
            await self._until_finished(ids, began + bound)
        except TimeoutError:
            await self._cancel(ids)
            raise NotRun(f"not run (over its {bound:.0f} s bound)") from None
        seconds = time.perf_counter() - began
        server_cpu = self.server.cpu_seconds() - cpu
        unfinished = await self.database.db.fetchval(
            "SELECT count(*) FROM queueflow.workflows WHERE id = ANY($1::text[]) AND status <> 'completed'", ids
        )
        if unfinished:
            raise RuntimeError(f"{shape}: {unfinished} of {len(ids)} workflows did not complete")
        return WorkflowRun(shape, "QueueFlow", seconds, server_cpu=server_cpu, healed=self.log.healed())

    async def _create(self, bodies: list[bytes]) -> list[str]:
        waiting = list(enumerate(bodies))
        ids: list[str] = [""] * len(bodies)

        async def client(connection: Connection) -> None:
            while waiting:
                index, body = waiting.pop()
                status, answer = await connection.request("POST", "/v1/workflows", body)
                if status in (400, 413):  # over the step limit, or the body limit
                    raise NotRun(f"not run (refused: {status} {_problem(answer)})")
                if status != 201:
                    raise HttpError(f"POST /v1/workflows: {status} {answer[:500]!r}")
                ids[index] = msgspec.json.decode(answer)["id"]

        await asyncio.gather(*(client(connection) for connection in self._clients))
        return ids

    async def _until_finished(self, ids: list[str], deadline: float) -> None:
        """Watch one running workflow by its key (the newest: likely the last to finish), and look for another only
        when it finishes: a scan of every id each 5 ms would take a share of the cores the run measures."""
        watched: str | None = None
        while True:
            if watched is None or not await self.database.db.fetchval(STILL_RUNNING, watched):
                watched = await self.database.db.fetchval(NEWEST_RUNNING, ids)
                if watched is None:
                    return
            self.server.check()
            if time.perf_counter() > deadline:
                raise TimeoutError
            await asyncio.sleep(POLL)

    async def _cancel(self, ids: list[str]) -> None:
        for workflow_id in ids:
            await self._clients[0].request("POST", f"/v1/workflows/{workflow_id}/cancel", b"{}")

    async def delayed_jobs(self, samples: int) -> Latencies:
        """`samples` jobs due 0.3–1.3 s after their enqueue, taken by the in-process runner: from each job's
        `scheduled_at` to its `started_at` (both the server's clock)."""
        connection = self._clients[0]
        ids = []
        for _ in range(samples):
            body = {"task_name": "noop", "delay_seconds": round(0.3 + random.random(), 3)}
            ids.append((await connection.post("/v1/jobs", body, 201))["id"])
        result = Latencies()
        deadline = time.monotonic() + 60
        for job_id in ids:
            job = await connection.get(f"/v1/jobs/{job_id}?wait_seconds=30")
            while job["status"] != "completed" and time.monotonic() < deadline:
                job = await connection.get(f"/v1/jobs/{job_id}?wait_seconds=30")
            if job["status"] != "completed" or job["started_at"] is None:
                result.missed += 1
                continue
            late = datetime.fromisoformat(job["started_at"]) - datetime.fromisoformat(job["scheduled_at"])
            result.seconds.append(max(0.0, late.total_seconds()))
        return result


def _problem(answer: bytes) -> str:
    """A problem response's gist: its field errors' messages, else its title."""
    try:
        problem = msgspec.json.decode(answer)
    except msgspec.DecodeError:
        return answer[:200].decode(errors="replace")
    messages = [f"{error['field']} {error['message']}".strip() for error in problem.get("errors") or []]
    return "; ".join(messages[:2]) or str(problem.get("detail") or problem.get("title", ""))


def describe_run(run: WorkflowRun) -> str:
    cpu = f"; server CPU {run.cpu_ms_per_step:.2f} ms a step, {run.healed} healed" if run.server_cpu is not None else ""
    return (
        f"{run.shape}, {run.side}: {run.seconds:.3f} s = {run.steps_per_second:,.0f} steps/s,"
        f" {run.ms_per_step:.2f} ms a step{cpu}"
    )
