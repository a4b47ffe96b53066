"""Single measurements the scenarios cannot make: what happens to work a departed client's long-poll would
have claimed, how a server answers while slow statements hold every pooled connection, how soon a worker
holding hundreds of jobs it has not started exits after SIGTERM, and what that costs them, and how many jobs
concurrent leasers get from a rate-limited queue."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import asyncpg
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
    return [
        await abandoned_long_poll(),
        *await exhausted_pool(),
        *await stop_with_unstarted_jobs(),
        await rate_limited_leasers(),
    ]


RATE_JOBS, RATE_LEASERS, RATE_SECONDS = 5, 4, 2.0


async def rate_limited_leasers() -> Finding:
    """`RATE_LEASERS` clients lease one job at a time, as fast as they can, for `RATE_SECONDS` from a queue limited
    to `RATE_JOBS` a second (a token bucket: the burst, then the refill): how many jobs they got, against what the
    bucket holds over that time, plus one claim that read its time as the bucket refilled."""
    async with AsyncExitStack() as stack:
        _, _, base, http = await _api_server(stack)
        jobs = [{"task_name": "probe", "queue_name": "rated"} for _ in range(4 * RATE_JOBS * int(RATE_SECONDS))]
        await http.post("/v1/jobs/batch", json={"jobs": jobs}, headers=TENANT)
        limit = {"rate_limit": {"jobs": RATE_JOBS, "per_seconds": 1}}
        configured = time.monotonic()  # the bucket starts full when the limit is set
        (await http.patch("/v1/queues/rated", json=limit, headers=TENANT)).raise_for_status()
        stop_at = configured + RATE_SECONDS
        leased: list[str] = []

        async def lease_until_the_end() -> None:
            async with httpx.AsyncClient(base_url=base, timeout=60) as own:  # a connection each, as workers have
                while time.monotonic() < stop_at:
                    answer = await own.post("/v1/worker/lease", json={"queues": ["rated"]}, headers=WORKER)
                    leased.extend(job["id"] for job in answer.raise_for_status().json()["jobs"])

        await asyncio.gather(*(lease_until_the_end() for _ in range(RATE_LEASERS)))
    allowed = RATE_JOBS + RATE_SECONDS * RATE_JOBS + 1
    name = f"rate limit {RATE_JOBS}/s, {RATE_LEASERS} concurrent leasers, {RATE_SECONDS:g} s: jobs leased"
    return Finding(name, len(leased), allowed, unit="")


UNSTARTED, SLOTS, SLOW_SECONDS = 500, 10, 1.0


async def stop_with_unstarted_jobs() -> list[Finding]:
    """A Python SDK worker leases `SLOTS` running and `UNSTARTED` waiting 1 s jobs (`prefetch`), then gets SIGTERM:
    how long until it exits, and how many of its jobs it left `running` or with a retry counted (it should release
    the waiting ones at once, finish the running ones, and go)."""
    async with AsyncExitStack() as stack:
        work, url, base, http = await _api_server(stack)
        held = UNSTARTED + SLOTS
        jobs = [{"task_name": "slow", "queue_name": "probe", "max_retries": 0} for _ in range(held)]
        await http.post("/v1/jobs/batch", json={"jobs": jobs}, headers=TENANT)
        argv = [sys.executable, "-m", "tests.chaos.slow_worker", base, cluster.WORKER_KEY, "probe"]
        argv += [str(SLOTS), str(UNSTARTED), str(SLOW_SECONDS)]
        worker = cluster.Process("slow-worker", argv, {}, work, ready_line="started; queues:")
        await asyncio.to_thread(worker.start)
        stack.callback(worker.kill)
        await _until_running(url, held)
        took = await asyncio.to_thread(worker.terminate)
        rows = await cluster.admin(
            "SELECT count(*) FILTER (WHERE status = 'running') AS running,"
            " count(*) FILTER (WHERE retry_count > 0 OR status = 'dead_letter') AS burnt FROM queueflow.jobs",
            url=url,
        )
    return [
        Finding(f"SIGTERM, {UNSTARTED} unstarted {SLOW_SECONDS:g} s jobs held: the worker's exit", took, 2.0),
        Finding("… jobs it left running (delayed by a lease)", rows[0]["running"], 0, unit=""),
        Finding("… jobs with a retry counted, or dead-lettered", rows[0]["burnt"], 0, unit=""),
    ]


async def _api_server(stack: AsyncExitStack) -> tuple[Path, str, str, httpx.AsyncClient]:
    """An API server on a database of its own, and a client of it, for as long as `stack` is open: its work
    directory, database URL, base URL and client."""
    work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="chaos-probe-")))
    url = await cluster.create_database()
    stack.push_async_callback(cluster.drop_database, url)
    api, base = cluster.server("api", "api", url, work, work / "ledger")
    await asyncio.to_thread(api.start)
    stack.callback(api.kill)
    http = await stack.enter_async_context(httpx.AsyncClient(base_url=base, timeout=60))
    return work, url, base, http


async def _until_running(url: str, count: int) -> None:
    """The worker is another process: poll the database until it holds `count` jobs, with a deadline."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = await cluster.admin("SELECT count(*) AS n FROM queueflow.jobs WHERE status = 'running'", url=url)
        if rows[0]["n"] >= count:
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"the worker never held {count} jobs")


EXHAUSTED_POOL, STATEMENT_TIMEOUT, SLOW_REQUESTS = 2, 1.0, 20
ACQUIRE_WAIT = 5.0
"""The store's wait for a free connection (its connect timeout) before it answers 503."""


async def exhausted_pool() -> list[Finding]:
    """Every statement a server runs waits behind a lock another session holds, with more requests than the
    server has connections: how long the slowest takes to answer, how many answers are not a 503 problem, and how
    soon after the lock goes a request succeeds again."""
    async with AsyncExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="chaos-probe-")))
        url = await cluster.create_database()
        stack.push_async_callback(cluster.drop_database, url)
        extra = ("--pool-size", str(EXHAUSTED_POOL), "--statement-timeout", str(STATEMENT_TIMEOUT))
        api, base = cluster.server("api", "api", url, work, work / "ledger", extra=extra)
        await asyncio.to_thread(api.start)
        stack.callback(api.kill)
        http = await stack.enter_async_context(httpx.AsyncClient(base_url=base, timeout=120))
        holder = await asyncpg.connect(url)
        stack.push_async_callback(holder.close)
        await http.post("/v1/jobs", json={"task_name": "probe"}, headers=TENANT)
        await holder.execute("BEGIN; LOCK TABLE queueflow.jobs IN ACCESS EXCLUSIVE MODE")

        async def one(n: int) -> tuple[int, str, float]:
            started = time.monotonic()
            if n % 2:
                response = await http.get("/v1/queues", headers=TENANT)
            else:
                response = await http.post("/v1/jobs", json={"task_name": "probe"}, headers=TENANT)
            code = response.json().get("code", "") if response.status_code >= 400 else ""
            return response.status_code, code, time.monotonic() - started

        answers = await asyncio.gather(*(one(n) for n in range(SLOW_REQUESTS)))
        await holder.execute("ROLLBACK")
        released = time.monotonic()
        while (await http.post("/v1/jobs", json={"task_name": "probe"}, headers=TENANT)).status_code != 201:
            if time.monotonic() - released > 30:
                break
        recovered = time.monotonic() - released
    slowest = max(took for _, _, took in answers)
    unclear = sum((status, code) != (503, "unavailable") for status, code, _ in answers)
    return [
        Finding(
            f"pool exhausted ({SLOW_REQUESTS} requests, {EXHAUSTED_POOL} connections): slowest answer",
            slowest,
            ACQUIRE_WAIT + STATEMENT_TIMEOUT + 2,
        ),
        Finding("pool exhausted: answers that are not a 503 problem", unclear, 0, unit=""),
        Finding("pool exhausted: lock released → next request succeeds", recovered, 1.0),
    ]


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
        value, limit = (
            (f"{f.value:.2f} {f.unit}", f"{f.limit:g} {f.unit}") if f.unit else (f"{f.value:g}", f"{f.limit:g}")
        )
        lines.append(f"| {f.name} | {value} | {limit} | {'yes' if f.holds else 'NO'} |")
    return "\n".join(lines)
