"""Which HTTP client pushes jobs to endpoints (issue 45): httpx or aiohttp, measured the same way.

A receiver (the push scenario's: a minimal ASGI app under uvicorn with httptools, its own process) answers 200
`{}` at once; one client process POSTs a delivery-sized signed body from `concurrency` tasks over one keep-alive
pool (HTTP/1.1), and counts requests per second and its own CPU per request (`time.process_time`: the receiver's
CPU is not the client's). Rounds alternate between the clients, so the machine's other load falls on both alike.

    .venv/bin/python -m bench.push_client [--requests 4000] [--concurrency 50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=18765)
    args = parser.parse_args()
    receiver = subprocess.Popen(  # the push scenario's receiver: `/` answers at once
        [sys.executable, "-c", push.RECEIVER, str(args.port), str(push.SLOW_SECONDS), str(push.HOLD_SECONDS)]
    )
    url = f"http://127.0.0.1:{args.port}/"
    try:
        time.sleep(1.5)
        results: dict[str, list[tuple[float, float]]] = {"httpx": [], "aiohttp": []}
        for _ in range(args.rounds):
            for name, run in (("httpx", with_httpx), ("aiohttp", with_aiohttp)):
                with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                    results[name].append(runner.run(run(url, args.requests, args.concurrency)))
        for name, rounds in results.items():
            rates = [rate for rate, _ in rounds]
            cpus = [cpu for _, cpu in rounds]
            rate_rounds = ", ".join(f"{rate:.0f}" for rate in rates)
            cpu_rounds = ", ".join(f"{cpu:.0f}" for cpu in cpus)
            print(
                f"{name:8} requests/s median {statistics.median(rates):7.0f} (rounds {rate_rounds})"
                f"  client CPU/request median {statistics.median(cpus):5.0f} µs (rounds {cpu_rounds})"
            )
    finally:
        receiver.terminate()
        receiver.wait()


if __name__ == "__main__":
    main()
