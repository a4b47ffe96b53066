"""Push delivery against the Python SDK worker (issue 45's targets), on one `queueflow serve --mode all
--allow-private-endpoints` process that serves both kinds.

The receiver is a minimal ASGI app (uvicorn with uvloop and httptools, a process of its own) on 127.0.0.1 that
answers 200 `{}` at once on `/`; it also counts, per path, the requests in flight and their peak, answers `/slow`
after SLOW_SECONDS, `/hold` after HOLD_SECONDS (so that deliveries overlap), and prints when each `/timed` request
arrived (one machine, one wall clock). Each endpoint has a queue of its own, so no endpoint ever takes another
figure's jobs, nor the SDK worker's (it drains `worker_drains.QUEUE`).

- **push drain ÷ SDK drain**: each repetition drains `jobs` seeded no-op jobs with the SDK worker, then pushes as
  many to the `/` endpoint at concurrency 50; the ratio of each pair, and of the server's CPU per job.
- **another endpoint's drain while one hangs**: the same push drain, beside an endpoint whose every request answers
  after SLOW_SECONDS (its concurrency full of them when the drain starts), ÷ the drain alone of that repetition.
- **enqueue → delivery received** on an idle endpoint: a job at a time by `POST /v1/jobs`, from its answer (the
  job's commit; the wake-up figures count from there too) to the request's arrival at the receiver; the same from
  the moment the enqueue was sent is in the details.
- **two servers, concurrency 5**: a second server on the same database; both push to the `/hold` endpoint, and the
  receiver's peak of requests in flight is the figure.
"""

from __future__ import annotations

import asyncio
import secrets
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import msgspec

from bench.database import BenchDatabase
from bench.httpclient import Connection
from bench.scenarios import worker_drains
from bench.scenarios.worker_drains import DrainRun, load
from bench.server import TENANT_KEY, QueueFlowServer, free_port

SERVER_ARGS = ("--allow-private-endpoints",)
SLOW_SECONDS = 10.0
HOLD_SECONDS = 0.02
DRAIN_CONCURRENCY = 50
TWO_SERVERS_CONCURRENCY = 5

# endpoint name → (receiver path, its queue, concurrency)
ENDPOINTS = {
    "drain": ("/", "push-drain", DRAIN_CONCURRENCY),
    "slow": ("/slow", "push-slow", DRAIN_CONCURRENCY),
    "idle": ("/timed", "push-idle", 10),
    "two": ("/hold", "push-two", TWO_SERVERS_CONCURRENCY),
}

RECEIVER = """
import asyncio, json, sys, time
SLOW, HOLD = float(sys.argv[2]), float(sys.argv[3])
flight, peak, count = {}, {}, {}
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    path = scope["path"]
    if path == "/stats":
        body = json.dumps({"peak": peak, "count": count, "in_flight": flight}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})
        return
    flight[path] = flight.get(path, 0) + 1
    peak[path] = max(peak.get(path, 0), flight[path])
    count[path] = count.get(path, 0) + 1
    try:
        if path == "/timed":
            print(dict(scope["headers"]).get(b"queueflow-job-id", b"").decode(), time.time(), flush=True)
        elif path == "/slow":
            await asyncio.sleep(SLOW)
        elif path == "/hold":
            await asyncio.sleep(HOLD)
    finally:
        flight[path] -= 1
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b"{}"})
import uvicorn
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), loop="uvloop", http="httptools", log_level="warning",
            access_log=False, backlog=2048)
"""


class Receiver:
    """The receiver process, and when each `/timed` job arrived (read from its output as it comes)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-c", RECEIVER, str(self.port), str(SLOW_SECONDS), str(HOLD_SECONDS)],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.arrived: dict[str, float] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            job, _, when = line.partition(" ")
            self.arrived[job] = float(when)

    async def stats(self) -> dict[str, dict[str, int]]:
        async with httpx.AsyncClient() as client:
            answer = await client.get(f"{self.url}/stats")
            answer.raise_for_status()
            stats: dict[str, dict[str, int]] = answer.json()
            return stats

    async def ready(self, within: float = 30) -> None:
        deadline = time.monotonic() + within
        while True:
            try:
                await self.stats()
                return
            except httpx.TransportError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the push receiver did not start") from None
                await asyncio.sleep(0.1)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


@dataclass(frozen=True, slots=True)
class PushDrain:
    jobs: int
    seconds: float
    server_cpu: float
    load: str
    beside_slow: bool = False
    """Drained while the slow endpoint had its concurrency full of requests that answer after SLOW_SECONDS."""

    @property
    def rate(self) -> float:
        return self.jobs / self.seconds


@dataclass
class PushRuns:
    """Every repetition's runs, by repetition number."""

    sdk: dict[int, DrainRun] = field(default_factory=dict)
    push: dict[int, PushDrain] = field(default_factory=dict)
    beside_slow: dict[int, PushDrain] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)
    """From the enqueue's answer (its commit) to the receiver's first byte of the request."""
    latencies_from_send_ms: list[float] = field(default_factory=list)
    """From sending the enqueue: its own request's time included."""
    two_servers_peak: int | None = None
    two_servers_jobs: int = 0


class PushBench:
    """The receiver, the server (started by the caller with SERVER_ARGS) and the bench tenant's endpoints."""

    def __init__(self, database: BenchDatabase, server: QueueFlowServer, logs: Path) -> None:
        self.database, self.server, self.logs = database, server, logs
        self.receiver = Receiver()
        self.http = httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{server.port}", headers={"Authorization": f"Bearer {TENANT_KEY}"}
        )

    async def __aenter__(self) -> PushBench:
        await self.receiver.ready()
        for name, (path, queue, concurrency) in ENDPOINTS.items():
            answer = await self.http.post(
                "/v1/endpoints",
                json={"name": name, "url": f"{self.receiver.url}{path}", "queues": [queue],
                      "concurrency": concurrency, "timeout_seconds": 30},
            )  # fmt: skip
            if answer.status_code != 201:
                raise RuntimeError(f"POST /v1/endpoints: {answer.status_code} {answer.text[:300]}")
        await asyncio.sleep(1.5)  # each server reads the endpoints every second
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.http.aclose()
        self.receiver.stop()

    async def _seed(self, queue: str, jobs: int) -> None:
        await self.database.db.execute(worker_drains.SEED, queue, secrets.token_hex(3), jobs)

    async def _until_drained(self, queue: str, limit: float) -> None:
        deadline = time.monotonic() + limit
        while await self.database.db.fetchval(worker_drains.UNFINISHED, queue):
            self.server.check()
            if time.monotonic() > deadline:
                raise TimeoutError(f"queue {queue} was not drained in {limit:.0f} s")
            await asyncio.sleep(0.02)

    async def sdk_drain(self, jobs: int) -> DrainRun:
        return await worker_drains.drain("Python SDK", self.database, jobs, self.logs, server=self.server)

    async def push_drain(self, jobs: int, *, beside_slow: bool = False) -> PushDrain:
        """`jobs` no-op jobs pushed to the `/` endpoint (after one to warm it), on an emptied, vacuumed table; with
        `beside_slow`, while the slow endpoint has its concurrency full."""
        queue = ENDPOINTS["drain"][1]
        await self.database.reset_jobs()
        await self._seed(queue, 1)
        await self._until_drained(queue, 60)
        await self.database.reset_jobs()
        await self.database.vacuum()
        if beside_slow:
            slow_queue, slow_concurrency = ENDPOINTS["slow"][1], ENDPOINTS["slow"][2]
            await self._seed(slow_queue, slow_concurrency * 4)  # hung for 4 holds: 40 s
            await self._until_in_flight("/slow", slow_concurrency, SLOW_SECONDS / 2)
        cpu = self.server.cpu_seconds()
        await self._seed(queue, jobs)
        began = time.perf_counter()
        await self._until_drained(queue, 600)
        seconds = time.perf_counter() - began
        run = PushDrain(jobs, seconds, self.server.cpu_seconds() - cpu, load(), beside_slow)
        if beside_slow and (await self.receiver.stats())["in_flight"].get("/slow", 0) < ENDPOINTS["slow"][2]:
            # The drain outlasted the slow requests' hold: part of it ran beside a slow endpoint answering.
            print(f"  (the drain took {seconds:.1f} s: longer than the slow endpoint's {SLOW_SECONDS:.0f} s hold)")
        return run

    async def _until_in_flight(self, path: str, count: int, within: float) -> None:
        deadline = time.monotonic() + within
        while (await self.receiver.stats())["in_flight"].get(path, 0) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path}: {count} requests not in flight within {within:.0f} s")
            await asyncio.sleep(0.05)

    async def latencies(self, samples: int) -> tuple[list[float], list[float]]:
        """Enqueue → delivery received on the idle endpoint, ms, a job at a time, idle between samples: from the
        enqueue's answer (its commit, as the wake-up figures count), and from the moment it was sent."""
        queue = ENDPOINTS["idle"][1]
        connection = await Connection("127.0.0.1", self.server.port, TENANT_KEY).open()
        body = msgspec.json.encode({"task_name": "noop", "queue_name": queue})
        committed: list[float] = []
        sent: list[float] = []
        try:
            for _ in range(samples):
                began = time.time()
                job = (await connection.post("/v1/jobs", body, 201))["id"]
                answered = time.time()
                deadline = time.monotonic() + 30
                while job not in self.receiver.arrived:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"job {job} was not delivered within 30 s")
                    await asyncio.sleep(0.0005)  # the receiver is another process: its output is polled
                arrived = self.receiver.arrived[job]
                committed.append(max(0.0, arrived - answered) * 1000)
                sent.append((arrived - began) * 1000)
                await asyncio.sleep(0.05)
        finally:
            await connection.close()
        return committed, sent

    async def two_servers(self, jobs: int) -> int:
        """The receiver's peak of `/hold` requests in flight while this server and a second one on the same
        database push `jobs` jobs to the endpoint of concurrency TWO_SERVERS_CONCURRENCY."""
        second = QueueFlowServer(self.database.url, self.logs / "push-second-server.log", SERVER_ARGS).start()
        try:
            await asyncio.sleep(1.5)  # it reads the endpoints within a second
            queue = ENDPOINTS["two"][1]
            await self._seed(queue, jobs)
            await self._until_drained(queue, 600)
            second.check()
        finally:
            second.stop()
        stats = await self.receiver.stats()
        if stats["count"].get("/hold", 0) < jobs:
            raise RuntimeError(f"{stats['count'].get('/hold', 0)} of {jobs} jobs reached the receiver")
        return stats["peak"]["/hold"]


def describe(run: PushDrain) -> str:
    beside = " beside a hung endpoint" if run.beside_slow else ""
    return (
        f"push drain{beside}, concurrency {DRAIN_CONCURRENCY}: {run.jobs:,} jobs in {run.seconds:.2f} s ="
        f" {run.rate:,.0f} jobs/s; server CPU {run.server_cpu:.2f} s; load {run.load}"
    )
