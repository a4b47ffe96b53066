"""The cost of one request: the server's CPU per request of each single-item route, ÷ that of `GET /healthz`.

`/healthz` is the framework's floor (uvicorn, httptools, Litestar, the metrics middleware): what any route costs
before it does anything of its own. Each route runs `requests` times over CLIENTS keep-alive connections, every
request encoded once before the clock starts (bench/httpclient.py), so the load generator stays light; the server's
utime + stime over the phase ÷ the requests is its cost. `/healthz` is measured before the routes and after them,
and its mean is the round's floor, so a drift in the machine's speed during a round falls on both sides.

    python -m bench.scenarios.per_request [--requests N] [--rounds R]

runs it alone against a fresh database and prints each round (for A/B comparisons between two checkouts).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from bench.database import BenchDatabase
from bench.httpclient import Connection, HttpError, close_all, connections
from bench.server import TENANT_KEY, WORKER_KEY, QueueFlowServer

CLIENTS = 4
QUEUE = "per-request"
EMPTY_QUEUE = "per-request-empty"
ROUTES = {
    "healthz": "GET /healthz",
    "enqueue": "POST /v1/jobs, one job",
    "get": "GET /v1/jobs/{id}",
    "lease": "POST /v1/worker/lease, max_jobs 1",
    "complete": "POST /v1/worker/jobs/{id}/complete",
    "empty_lease": "POST /v1/worker/lease on an empty queue, wait_seconds 0",
}
"""key → what the route is (the report's label)."""


@dataclass(frozen=True, slots=True)
class RouteRun:
    requests: int
    seconds: float
    server_cpu: float

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    @property
    def cpu_us(self) -> float:
        """Server CPU per request, µs."""
        return self.server_cpu / self.requests * 1e6


Round = dict[str, RouteRun]


def ratios(round_: Round) -> dict[str, float]:
    """Each route's CPU per request ÷ `/healthz`'s (the round's floor)."""
    floor = round_["healthz"].cpu_us
    # CPU time is read in clock ticks (10 ms): a smoke round's few /healthz requests can take none.
    return {key: run.cpu_us / floor if floor > 0 else math.nan for key, run in round_.items() if key != "healthz"}


class PerRequest:
    """The phases against one server, on CLIENTS tenant and CLIENTS worker connections kept open."""

    def __init__(self, server: QueueFlowServer) -> None:
        self._server = server
        self._tenants: list[Connection] = []
        self._workers: list[Connection] = []

    async def open(self) -> PerRequest:
        self._tenants = await connections("127.0.0.1", self._server.port, TENANT_KEY, CLIENTS)
        self._workers = await connections("127.0.0.1", self._server.port, WORKER_KEY, CLIENTS)
        return self

    async def close(self) -> None:
        await close_all(self._tenants + self._workers)

    async def round(self, requests: int) -> Round:
        """Every route once, `requests` requests each; the jobs enqueued are the ones read, leased and completed."""
        per_client = max(1, requests // CLIENTS)
        count = per_client * CLIENTS
        runs: Round = {}
        before = await self._timed(self._same(self._tenants, "GET", "/healthz", None, per_client))
        enqueue = msgspec.json.encode({"task_name": "noop", "queue_name": QUEUE, "payload": {"i": 1}})
        created: list[list[str]] = [[] for _ in range(CLIENTS)]
        runs["enqueue"] = await self._timed(
            self._collect(self._tenants, "POST", "/v1/jobs", enqueue, created, per_client, 201)
        )
        get = [
            [c.encode("GET", f"/v1/jobs/{id_}") for id_ in ids] for c, ids in zip(self._tenants, created, strict=True)
        ]
        runs["get"] = await self._timed(self._each(self._tenants, get))
        lease = msgspec.json.encode({"queues": [QUEUE], "max_jobs": 1, "lease_seconds": 60})
        leased: list[list[str]] = [[] for _ in range(CLIENTS)]
        runs["lease"] = await self._timed(
            self._collect(self._workers, "POST", "/v1/worker/lease", lease, leased, per_client)
        )
        complete = [
            [c.encode("POST", f"/v1/worker/jobs/{id_}/complete", token) for id_, token in held]
            for c, held in zip(self._workers, (map(_complete, each) for each in leased), strict=True)
        ]
        runs["complete"] = await self._timed(self._each(self._workers, complete))
        empty = msgspec.json.encode({"queues": [EMPTY_QUEUE], "max_jobs": 1, "wait_seconds": 0})
        runs["empty_lease"] = await self._timed(
            self._same(self._workers, "POST", "/v1/worker/lease", empty, per_client)
        )
        after = await self._timed(self._same(self._tenants, "GET", "/healthz", None, per_client))
        runs["healthz"] = RouteRun(2 * count, before.seconds + after.seconds, before.server_cpu + after.server_cpu)
        return {key: runs[key] for key in ROUTES}

    async def _timed(self, body: Callable[[], Awaitable[int]]) -> RouteRun:
        cpu, started = self._server.cpu_seconds(), time.perf_counter()
        done = await body()
        return RouteRun(done, time.perf_counter() - started, self._server.cpu_seconds() - cpu)

    def _same(
        self, clients: list[Connection], method: str, path: str, body: bytes | None, times: int
    ) -> Callable[[], Awaitable[int]]:
        return self._each(clients, [[c.encode(method, path, body)] * times for c in clients])

    @staticmethod
    def _each(clients: list[Connection], requests: list[list[bytes]]) -> Callable[[], Awaitable[int]]:
        async def client(connection: Connection, mine: list[bytes]) -> int:
            for raw in mine:
                status, answer = await connection.exchange(raw)
                if status != 200:
                    raise HttpError(f"{raw.split(b' ', 2)[:2]}: {status} {answer[:300]!r}")
            return len(mine)

        async def run() -> int:
            return sum(await asyncio.gather(*(client(c, mine) for c, mine in zip(clients, requests, strict=True))))

        return run

    @staticmethod
    def _collect(
        clients: list[Connection],
        method: str,
        path: str,
        body: bytes,
        into: list[list[str]],
        times: int,
        expect: int = 200,
    ) -> Callable[[], Awaitable[int]]:
        """Each client sends `body` `times` times and collects what each answer names into its own list
        (enqueue: the job id; lease: `id lease_token`)."""

        async def client(connection: Connection, mine: list[str], times: int) -> int:
            raw = connection.encode(method, path, body)
            for _ in range(times):
                status, answer = await connection.exchange(raw)
                if status != expect:
                    raise HttpError(f"{method} {path}: {status} {answer[:300]!r}")
                decoded = msgspec.json.decode(answer)
                if "jobs" in decoded:
                    jobs = decoded["jobs"]
                    if not jobs:
                        raise RuntimeError(f"{path}: nothing to lease")
                    mine.append(f"{jobs[0]['id']} {jobs[0]['lease_token']}")
                else:
                    mine.append(decoded["id"])
            return times

        async def run() -> int:
            return sum(await asyncio.gather(*(client(c, mine, times) for c, mine in zip(clients, into, strict=True))))

        return run


def _complete(held: str) -> tuple[str, bytes]:
    id_, token = held.split(" ")
    return id_, msgspec.json.encode({"lease_token": token, "result": {"ok": True}})


async def measure(server: QueueFlowServer, requests: int, rounds: int, warm_up: int = 200) -> list[Round]:
    """`rounds` rounds of `requests` requests per route, after one untimed round of `warm_up`."""
    runner = await PerRequest(server).open()
    try:
        await runner.round(warm_up)
        return [await runner.round(requests) for _ in range(rounds)]
    finally:
        await runner.close()


def describe(round_: Round) -> str:
    ratio = {"healthz": 1.0, **ratios(round_)}
    return "  ".join(f"{key} {run.cpu_us:.0f} µs ({ratio[key]:.2f}×, {run.rate:,.0f}/s)" for key, run in round_.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--log", type=Path, default=Path("/tmp/queueflow-per-request.log"))
    args = parser.parse_args()

    async def run() -> None:
        async with BenchDatabase("per_request") as database:
            database.migrate()
            server = QueueFlowServer(database.url, args.log).start()
            try:
                for round_ in await measure(server, args.requests, args.rounds):
                    print(describe(round_), flush=True)
                    print("JSON " + msgspec.json.encode({k: r.cpu_us for k, r in round_.items()}).decode(), flush=True)
            finally:
                server.stop()

    asyncio.run(run())


if __name__ == "__main__":
    main()
