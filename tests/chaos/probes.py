"""Single measurements the scenarios cannot make: what happens to work a departed client's long-poll would
have claimed."""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.chaos import cluster

PARKED = re.compile(r"^queueflow_lease_waiters(?:\{[^}]*\})? (\S+)$", re.MULTILINE)
ABANDONED_LEASE = 5.0
WORKER = {"Authorization": f"Bearer {cluster.WORKER_KEY}"}
TENANT = {"Authorization": f"Bearer {cluster.TENANT_KEYS['tenant-a']}"}


@dataclass
class Finding:
    name: str
    value: float
    limit: float
    unit: str = "s"

    @property
    def holds(self) -> bool:
        return self.value <= self.limit


async def run_all() -> list[Finding]:
    return [await abandoned_long_poll()]


async def abandoned_long_poll() -> Finding:
    """A worker parks a long-poll and goes away (its connection closes); then a job arrives. How long until a
    live worker gets it? Claimed for the departed worker, it would wait out that lease and the janitor."""
    async with AsyncExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="chaos-probe-")))
        url = await cluster.create_database()
        stack.push_async_callback(cluster.drop_database, url)
        timing = ("--janitor-interval", "0.5", "--safety-poll", "1")
        api, base = cluster.server("api", "api", url, work, work / "ledger", lease_timing=timing)
        janitor, _ = cluster.server("janitor", "worker", url, work, work / "ledger", lease_timing=timing)
        for process in (api, janitor):
            await asyncio.to_thread(process.start)
            stack.callback(process.kill)
        http = await stack.enter_async_context(httpx.AsyncClient(base_url=base, timeout=60))
        body = json.dumps({"queues": ["probe"], "wait_seconds": 30, "lease_seconds": ABANDONED_LEASE}).encode()
        host, port = base.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        head = (
            f"POST /v1/worker/lease HTTP/1.1\r\nHost: {host}\r\nAuthorization: {WORKER['Authorization']}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        writer.write(head.encode() + body)
        await writer.drain()
        await _until_parked(http, 1)
        writer.close()  # the worker is gone
        await writer.wait_closed()
        await _until_parked(http, 0, allow_timeout=True)
        started = time.monotonic()
        await http.post("/v1/jobs", json={"task_name": "probe", "queue_name": "probe"}, headers=TENANT)
        while True:
            leased = await http.post("/v1/worker/lease", json={"queues": ["probe"], "wait_seconds": 30}, headers=WORKER)
            if leased.json()["jobs"]:
                break
        del reader
        return Finding("abandoned long-poll: a job's wait for a live worker", time.monotonic() - started, 1.0)


async def _until_parked(http: httpx.AsyncClient, count: int, *, allow_timeout: bool = False) -> None:
    """The server is another process: poll its parked-lease gauge, with a deadline."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        found = PARKED.search((await http.get("/metrics")).text)
        if found and float(found.group(1)) == count:
            return
        await asyncio.sleep(0.05)
    if not allow_timeout:
        raise RuntimeError(f"the server never had {count} parked lease(s)")


def describe(findings: Sequence[Finding]) -> str:
    lines = ["| probe | measured | limit | holds |", "|---|---|---|---|"]
    for f in findings:
        lines.append(f"| {f.name} | {f.value:.2f} {f.unit} | {f.limit:g} {f.unit} | {'yes' if f.holds else 'NO'} |")
    return "\n".join(lines)
