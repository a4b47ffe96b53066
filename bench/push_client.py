"""Which HTTP client pushes jobs to endpoints (issue 45): httpx or aiohttp, measured the same way; and the floor
of one request's client CPU from Python: `raw`, a minimal asyncio protocol client (one keep-alive connection per
task, the request's head formatted into bytes, the answer parsed by httptools, as uvicorn parses requests), a lab
client that does only what a delivery must (no pool, no timeouts, no redirects check, no cookie jar).

A receiver (the push scenario's: a minimal ASGI app under uvicorn with httptools, its own process) answers 200
`{}` at once; one client process POSTs a delivery-sized signed body from `concurrency` tasks over one keep-alive
pool (HTTP/1.1), and counts requests per second and its own CPU per request (`time.process_time`: the receiver's
CPU is not the client's). Rounds alternate between the clients, so the machine's other load falls on both alike.

    .venv/bin/python -m bench.push_client [--requests 4000] [--concurrency 50] [--rounds 3] [--clients raw,aiohttp]

The receiver's own CPU per request (from /proc) is printed beside each client's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import uvloop

from bench.scenarios import push

BODY = json.dumps({"job": {"id": "job_01JXYZ", "task_name": "noop", "payload": {"n": 1}}, "delivery": 1}).encode()
HEADERS = {
    "Content-Type": "application/json",
    "QueueFlow-Job-Id": "job_01JXYZ",
    "QueueFlow-Delivery": "1",
    "QueueFlow-Signature": "t=1765000000,v1=" + "0" * 64,
}

Post = Callable[[], Awaitable[int]]


async def drive(post: Post, requests: int, concurrency: int) -> tuple[float, float]:
    """(requests/s, CPU µs per request) of `requests` POSTs from `concurrency` tasks."""
    left = requests

    async def task() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            assert await post() == 200

    await asyncio.gather(*(task() for _ in range(concurrency)))  # warm the pool
    left = requests
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(task() for _ in range(concurrency)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return requests / wall, cpu / requests * 1e6


async def with_httpx(url: str, requests: int, concurrency: int) -> tuple[float, float]:
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, follow_redirects=False, http2=False) as client:

        async def post() -> int:
            response = await client.post(url, content=BODY, headers=HEADERS)
            await response.aread()
            return response.status_code

        return await drive(post, requests, concurrency)


async def with_aiohttp(url: str, requests: int, concurrency: int) -> tuple[float, float]:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def post() -> int:
            async with session.post(url, data=BODY, headers=HEADERS, allow_redirects=False) as response:
                await response.read()
                return response.status

        return await drive(post, requests, concurrency)


class _RawConnection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: a request written, its answer parsed (httptools), one at a time."""

    def __init__(self) -> None:
        import httptools

        self.parser = httptools.HttpResponseParser(self)
        self.done: asyncio.Future[int] | None = None
        self.transport: asyncio.Transport | None = None
        self.body: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        assert self.done is not None
        self.done.set_result(self.parser.get_status_code())

    async def post(self, head: bytes, body: bytes) -> int:
        assert self.transport is not None
        self.done = asyncio.get_running_loop().create_future()
        self.body.clear()
        self.transport.write(head + body)
        return await self.done


async def with_raw(url: str, requests: int, concurrency: int) -> tuple[float, float]:
    host, _, port = url.removeprefix("http://").rstrip("/").partition(":")
    loop = asyncio.get_running_loop()
    connections = [(await loop.create_connection(_RawConnection, host, int(port)))[1] for _ in range(concurrency)]
    free = list(connections)

    async def post() -> int:
        connection = free.pop()
        try:
            headers = "".join(f"{name}: {value}\r\n" for name, value in HEADERS.items())
            head = (
                f"POST / HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: QueueFlow\r\n{headers}"
                f"Content-Length: {len(BODY)}\r\n\r\n"
            ).encode()
            return await connection.post(head, BODY)
        finally:
            free.append(connection)

    try:
        return await drive(post, requests, concurrency)
    finally:
        for connection in connections:
            assert connection.transport is not None
            connection.transport.close()


def process_cpu(pid: int) -> float:
    """A process's CPU seconds so far (user + system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def with_sender(url: str, requests: int, concurrency: int) -> tuple[float, float]:
    """The server's own `Sender` (aiohttp, with the delivery's body, signature, timeouts and answer reading), over
    jobs leased from an in-memory engine: what a delivery's request costs beside a bare aiohttp POST."""
    import random
    from datetime import UTC, datetime

    from queueflow.clocks import SystemClock
    from queueflow.core.endpoints import Endpoint
    from queueflow.core.types import NewJob
    from queueflow.engine import Engine, EngineSettings
    from queueflow.runtime.delivery.client import Sender
    from queueflow.stores.memory import InMemoryJobStore

    engine = Engine(
        InMemoryJobStore(), SystemClock(), rng=random.Random(), settings=EngineSettings(allow_private_endpoints=True)
    )
    await engine.enqueue_many("bench", [NewJob(task_name="noop", payload={"n": n}) for n in range(1000)])
    jobs = await engine.lease(["default"], max_jobs=1000, lease_seconds=3600, scope="bench")
    now = datetime.now(UTC)
    endpoint = Endpoint(
        id="ep", tenant_id="bench", name="bench", url=url, queues=("default",), task_names=None, concurrency=50,
        timeout_seconds=30, paused=False, secret="s" * 43, previous_secret=None, previous_secret_until=None,
        created_at=now, updated_at=now,
    )  # fmt: skip
    sender = Sender(engine.endpoints, max_body_bytes=1 << 20)
    sent = 0

    async def post() -> int:
        nonlocal sent
        sent += 1
        return (await sender.send(endpoint, jobs[sent % len(jobs)], 30.0)).status

    try:
        return await drive(post, requests, concurrency)
    finally:
        await sender.close()


CLIENTS = {"httpx": with_httpx, "aiohttp": with_aiohttp, "raw": with_raw, "sender": with_sender}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=18765)
    parser.add_argument("--clients", default="httpx,aiohttp,raw")
    args = parser.parse_args()
    receiver = subprocess.Popen(  # the push scenario's receiver: `/` answers at once
        [sys.executable, "-c", push.RECEIVER, str(args.port), str(push.SLOW_SECONDS), str(push.HOLD_SECONDS)]
    )
    url = f"http://127.0.0.1:{args.port}/"
    try:
        time.sleep(1.5)
        names = args.clients.split(",")
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
        receiving: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(args.rounds):
            for name in names:
                before = process_cpu(receiver.pid)
                with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                    results[name].append(runner.run(CLIENTS[name](url, args.requests, args.concurrency)))
                # The warm-up pass's requests are the receiver's too: twice `requests`.
                receiving[name].append((process_cpu(receiver.pid) - before) / (2 * args.requests) * 1e6)
        for name, rounds in results.items():
            rates = [rate for rate, _ in rounds]
            cpus = [cpu for _, cpu in rounds]
            rate_rounds = ", ".join(f"{rate:.0f}" for rate in rates)
            cpu_rounds = ", ".join(f"{cpu:.0f}" for cpu in cpus)
            print(
                f"{name:8} requests/s median {statistics.median(rates):7.0f} (rounds {rate_rounds})"
                f"  client CPU/request median {statistics.median(cpus):5.0f} µs (rounds {cpu_rounds})"
                f"  receiver CPU/request median {statistics.median(receiving[name]):4.0f} µs"
            )
    finally:
        receiver.terminate()
        receiver.wait()


if __name__ == "__main__":
    main()
