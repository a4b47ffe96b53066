"""Every core: single-job enqueue (`POST /v1/jobs`, one job per request) on `queueflow serve --workers 2` ÷ on
`--workers 1`, both servers up at once on one database, measured in alternation, repetition by repetition.

CLIENTS keep-alive connections (more than the processes: the kernel spreads them over the processes' sockets by
their addresses' hash, so each gets some, not always as many), every request encoded before the clock starts
(bench/httpclient.py). Beside the rate, what each request cost every party on the 2 cores: the server (utime + stime
of the parent and the processes it forked), PostgreSQL (the backends of the bench database, read from /proc by their
pids) and the load generator (this process): a ratio short of the cores' count is explained by who else takes them.

    python -m bench.scenarios.prefork [--requests N] [--rounds R]

runs it alone against a fresh database.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from dataclasses import dataclass
from pathlib import Path

import msgspec

from bench import stats
from bench.cpu import machine_busy_seconds
from bench.database import BenchDatabase
from bench.httpclient import Connection, HttpError, close_all, connections
from bench.server import TENANT_KEY, QueueFlowServer

CLIENTS = 8
QUEUE = "prefork"
PROCESSES = (1, 2)


@dataclass(frozen=True, slots=True)
class EnqueueRun:
    processes: int
    requests: int
    seconds: float
    server_cpu: float
    postgres_cpu: float | None
    """None: PostgreSQL's processes are not readable in /proc here."""
    client_cpu: float
    machine_cpu: float
    """CPU seconds every core of the machine spent busy (not idle or waiting on I/O) over the run, whoever ran."""

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    def describe(self) -> str:
        per = 1e6 / self.requests
        postgres = "?" if self.postgres_cpu is None else f"{self.postgres_cpu * per:.0f}"
        return (
            f"--workers {self.processes}: {self.rate:,.0f} requests/s; CPU per request: server"
            f" {self.server_cpu * per:.0f} µs, PostgreSQL {postgres} µs,"
            f" load generator {self.client_cpu * per:.0f} µs; the machine busy {self.machine_cpu / self.seconds:.2f}"
            f" of {os.cpu_count()} cores"
        )


class Side:
    """One server and its open connections."""

    def __init__(self, server: QueueFlowServer) -> None:
        self.server = server
        self.connections: list[Connection] = []

    async def open(self) -> Side:
        self.connections = await connections("127.0.0.1", self.server.port, TENANT_KEY, CLIENTS)
        return self

    async def run(self, database: BenchDatabase, processes: int, requests: int) -> EnqueueRun:
        body = msgspec.json.encode({"task_name": "noop", "queue_name": QUEUE, "payload": {"i": 1}})
        per_client = max(1, requests // CLIENTS)

        async def client(connection: Connection) -> int:
            raw = connection.encode("POST", "/v1/jobs", body)
            for _ in range(per_client):
                status, answer = await connection.exchange(raw)
                if status != 201:
                    raise HttpError(f"POST /v1/jobs: {status} {answer[:300]!r}")
            return per_client

        async with database.postgres_cpu() as postgres:
            server, client_cpu = self.server.cpu_seconds(), time.process_time()
            busy = machine_busy_seconds()
            started = time.perf_counter()
            done = sum(await asyncio.gather(*(client(c) for c in self.connections)))
            seconds = time.perf_counter() - started
            server, client_cpu = self.server.cpu_seconds() - server, time.process_time() - client_cpu
            busy = machine_busy_seconds() - busy
        assert postgres.result is not None
        return EnqueueRun(processes, done, seconds, server, postgres.result.backends, client_cpu, busy)


async def measure(
    database: BenchDatabase, logs: Path, requests: int, repetitions: int, server_args: tuple[str, ...] = ()
) -> list[dict[int, EnqueueRun]]:
    """`repetitions` of: `requests` enqueues on `--workers 1`, then on `--workers 2` (every other repetition the
    other way round), after an untimed round on each."""
    servers = {
        n: QueueFlowServer(database.url, logs / f"prefork-{n}.log", ("--workers", str(n), *server_args))
        for n in PROCESSES
    }
    sides: dict[int, Side] = {}
    try:
        for n, server in servers.items():
            server.start()
            sides[n] = await Side(server).open()
        for n, side in sides.items():
            await side.run(database, n, 50 * CLIENTS)
        rounds: list[dict[int, EnqueueRun]] = []
        for number in range(repetitions):
            order = PROCESSES if number % 2 == 0 else PROCESSES[::-1]
            rounds.append({n: await sides[n].run(database, n, requests) for n in order})
            await database.reset_jobs()
        return rounds
    finally:
        for side in sides.values():
            await close_all(side.connections)
        for server in servers.values():
            server.stop()


def ratio(round_: dict[int, EnqueueRun]) -> float:
    return round_[2].rate / round_[1].rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--logs", type=Path, default=Path("/tmp"))
    args = parser.parse_args()

    async def run() -> None:
        async with BenchDatabase("prefork") as database:
            database.migrate()
            await database.connect()
            rounds = await measure(database, args.logs, args.requests, args.rounds)
            for round_ in rounds:
                print(f"{ratio(round_):.3f}  " + "  ".join(r.describe() for r in round_.values()), flush=True)
            print(f"median --workers 2 ÷ --workers 1: {stats.median([ratio(r) for r in rounds]):.3f}")

    asyncio.run(run())


if __name__ == "__main__":
    main()
