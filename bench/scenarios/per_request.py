"""The cost of one request: the server's CPU per request of each single-item route, ÷ that of a route that runs one
database statement (issue 46), and ÷ that of `GET /healthz` (the measure before it, kept for its history).

The one-query route, `GET /bench/floor/{id}` (bench/floor_app.py, served with the app only by the bench's
server), runs one prepared one-row SELECT by primary key and answers the row as JSON: the framework's floor plus
one trip to PostgreSQL through the store's pool, the least any route of the API could cost. `/healthz` is the
framework's floor alone (uvicorn, httptools, Litestar, the metrics middleware). Each route runs `requests` times
over CLIENTS keep-alive connections, every request encoded once before the clock starts (bench/httpclient.py), so
the load generator stays light; the server's utime + stime over the phase ÷ the requests is its cost. Both floors
are measured before the routes and after them, each its mean the round's, so a drift in the machine's speed during
a round falls on both sides; the one-query route reads the jobs the round enqueues.

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
from bench.server import FLOOR_PATH, TENANT_KEY, WORKER_KEY, QueueFlowServer

CLIENTS = 4
QUEUE = "per-request"
EMPTY_QUEUE = "per-request-empty"
FLOOR = "floor"
HEALTHZ = "healthz"
FLOORS = (FLOOR, HEALTHZ)
"""The round's two floors: the one-query route (issue 46's) and `/healthz` (the one before it)."""
ROUTES = {
    HEALTHZ: "GET /healthz",
    FLOOR: "GET /bench/floor/{id}, the one-query route (one prepared one-row SELECT by primary key, as JSON)",
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


def ratios(round_: Round, floor: str = FLOOR) -> dict[str, float]:
    """Each route's CPU per request ÷ that of the round's `floor` (FLOOR or HEALTHZ), every route but the floors."""
    under = round_[floor].cpu_us
    # CPU time is read in clock ticks (10 ms): a smoke round's few requests of a floor can take none.
    return {key: run.cpu_us / under if under > 0 else math.nan for key, run in round_.items() if key not in FLOORS}


def floor_over_healthz(round_: Round) -> float:
    """The one-query route's CPU per request ÷ `/healthz`'s: what one statement and its row add to nothing."""
    healthz = round_[HEALTHZ].cpu_us
    return round_[FLOOR].cpu_us / healthz if healthz > 0 else math.nan


def both(before: RouteRun, after: RouteRun) -> RouteRun:
    """A floor measured before a round's routes and after them, as one run."""
    return RouteRun(
        before.requests + after.requests, before.seconds + after.seconds, before.server_cpu + after.server_cpu
    )


class PerRequest:
    """The phases against one server, on CLIENTS tenant and CLIENTS worker connections kept open."""

    def __init__(self, server: QueueFlowServer) -> None:
        if not server.floor:
            raise ValueError("the per-request scenario needs the one-query route: QueueFlowServer(..., floor=True)")
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
        runs: Round = {}
        before = await self._timed(self._same(self._tenants, "GET", "/healthz", None, per_client))
        enqueue = msgspec.json.encode({"task_name": "noop", "queue_name": QUEUE, "payload": {"i": 1}})
        created: list[list[str]] = [[] for _ in range(CLIENTS)]
        runs["enqueue"] = await self._timed(
            self._collect(self._tenants, "POST", "/v1/jobs", enqueue, created, per_client, 201)
        )
        floor = [
            [c.encode("GET", f"{FLOOR_PATH}/{id_}") for id_ in ids]
            for c, ids in zip(self._tenants, created, strict=True)
        ]
        floor_before = await self._timed(self._each(self._tenants, floor))
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
        runs[FLOOR] = both(floor_before, await self._timed(self._each(self._tenants, floor)))
        after = await self._timed(self._same(self._tenants, "GET", "/healthz", None, per_client))
        runs[HEALTHZ] = both(before, after)
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
    """One line: each route's µs, ÷ the one-query floor, ÷ /healthz, requests/s."""
    floor, healthz = ratios(round_, FLOOR), ratios(round_, HEALTHZ)
    parts = [
        f"healthz {round_[HEALTHZ].cpu_us:.0f} µs ({round_[HEALTHZ].rate:,.0f}/s)",
        f"floor {round_[FLOOR].cpu_us:.0f} µs (÷ healthz {floor_over_healthz(round_):.2f},"
        f" {round_[FLOOR].rate:,.0f}/s)",
    ]
    parts += [
        f"{key} {run.cpu_us:.0f} µs (÷ floor {floor[key]:.2f}, ÷ healthz {healthz[key]:.2f}, {run.rate:,.0f}/s)"
        for key, run in round_.items()
        if key not in FLOORS
    ]
    return "  ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--log", type=Path, default=Path("/tmp/queueflow-per-request.log"))
    args = parser.parse_args()

    async def run() -> None:
        async with BenchDatabase("per_request") as database:
            database.migrate()
            server = QueueFlowServer(database.url, args.log, floor=True).start()
            try:
                for round_ in await measure(server, args.requests, args.rounds):
                    print(describe(round_), flush=True)
                    print("JSON " + msgspec.json.encode({k: r.cpu_us for k, r in round_.items()}).decode(), flush=True)
            finally:
                server.stop()

    asyncio.run(run())


if __name__ == "__main__":
    main()
