"""A parked long-poll ends when no one needs it any more, on a real `queueflow serve` process.

- SIGTERM: the server answers it at once with no jobs and exits within 2 s. A server that waited out every parked
  lease (up to `wait_seconds`, 60 s) outlived an orchestrator's grace period (Kubernetes kills at 30 s).
- Its client goes away (a worker stopping or crashing mid-poll): the poll claims nothing more. One that went on
  waiting claimed the next job for no one, and that job waited out the lease and the janitor (the chaos probe
  measured 6.4 s with a 5 s lease).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from queueflow_client import JobContext, TaskRegistry, Worker

from tests import pg
from tests.e2e.live import ROOT, free_port, live_server

GRACE = 2.0
MEMORY = ("--database-url", "memory://")
PARKED = re.compile(r"^queueflow_lease_waiters(?:\{[^}]*\})? (\S+)$", re.MULTILINE)


def parked(http: httpx.Client) -> float:
    found = PARKED.search(http.get("/metrics").text)
    return float(found.group(1)) if found else 0.0


@pytest.mark.parametrize("mode", ["api", "all"])
def test_sigterm_answers_parked_long_polls_and_exits_within_two_seconds(mode: str) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [sys.executable, "-m", "queueflow.cli", "serve", "--mode", mode, "--port", str(port), *MEMORY],
        cwd=ROOT,
        env=os.environ.copy(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    answers: list[httpx.Response | BaseException] = []
    try:
        with httpx.Client(base_url=base, timeout=5) as http:
            # The server is another process that announces nothing we can wait on: poll its readiness and its
            # parked-lease gauge with a deadline.
            deadline = time.monotonic() + 30
            while True:
                try:
                    if http.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "server did not start"
                assert process.poll() is None, "server exited"

            def long_poll() -> None:
                try:
                    with httpx.Client(base_url=base, timeout=70) as client:
                        body = {"queues": ["shutdown"], "wait_seconds": 60}
                        answers.append(client.post("/v1/worker/lease", json=body))
                except BaseException as exc:
                    answers.append(exc)

            poller = threading.Thread(target=long_poll)
            poller.start()
            deadline = time.monotonic() + 10
            while parked(http) < 1:
                assert time.monotonic() < deadline, "the long-poll never parked"
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        poller.join(timeout=GRACE + 1)
        try:
            process.wait(timeout=GRACE + 1)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {GRACE + 1} s after SIGTERM")
        took = time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert took < GRACE, f"exit took {took:.1f} s"
    (answer,) = answers
    assert isinstance(answer, httpx.Response), answer
    assert (answer.status_code, answer.json()) == (200, {"jobs": []})


def wait_for_parked(http: httpx.Client, count: int) -> None:
    """The server is another process that announces nothing: poll its parked-lease gauge, with a deadline."""
    deadline = time.monotonic() + 10
    while parked(http) != count:
        assert time.monotonic() < deadline, f"never {count} parked long-polls"


def test_a_long_poll_whose_client_left_claims_nothing() -> None:
    with live_server(*MEMORY) as base, httpx.Client(base_url=base, timeout=10) as http:
        body = b'{"queues": ["abandoned"], "wait_seconds": 60, "lease_seconds": 600}'
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as departing:
            head = f"POST /v1/worker/lease HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            departing.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
            wait_for_parked(http, 1)
        wait_for_parked(http, 0)
        job = http.post("/v1/jobs", json={"task_name": "t", "queue_name": "abandoned"}).json()
        leased = http.post("/v1/worker/lease", json={"queues": ["abandoned"], "wait_seconds": 5}).json()
        assert [j["id"] for j in leased["jobs"]] == [job["id"]]


def test_a_python_worker_stopped_while_its_poll_is_parked_strands_nothing(database_url: str) -> None:
    """Stopping a worker mid-poll lets the poll answer (at the end of its short wait: cut, an answer on its way
    would strand its jobs) and leases nothing after, so a job enqueued next goes to the next worker at once, on
    its first delivery (it once went to an abandoned poll and waited out its lease, then dead-lettered without
    having run)."""
    tasks = TaskRegistry()

    @tasks.task("t")
    async def task(payload: dict[str, Any], ctx: JobContext) -> None:
        raise AssertionError("the stopped worker must run nothing")

    with live_server("--database-url", database_url, "--mode", "api") as base, httpx.Client(base_url=base) as http:

        async def start_and_stop() -> float:
            worker = Worker(base, None, tasks, queues=["stranding"], lease_seconds=600)
            await worker.start()
            await asyncio.to_thread(wait_for_parked, http, 1)
            began = time.monotonic()
            await worker.stop()
            return time.monotonic() - began

        took = asyncio.run(start_and_stop())
        assert took < 2, f"stop() took {took:.1f} s"
        wait_for_parked(http, 0)
        job = http.post("/v1/jobs", json={"task_name": "t", "queue_name": "stranding", "max_retries": 0}).json()
        began = time.monotonic()
        leased = http.post("/v1/worker/lease", json={"queues": ["stranding"], "wait_seconds": 5}).json()["jobs"]
        assert time.monotonic() - began < 1
        assert [(j["id"], j["delivery_count"]) for j in leased] == [(job["id"], 1)]


def test_a_lease_whose_client_left_during_its_claim_hands_its_jobs_back(database_url: str) -> None:
    """Not only a parked long-poll: a lease that claims at once (wait_seconds 0) and whose client closes the
    connection while the claim runs hands its jobs back, uncounted, instead of answering them into a closed socket.
    The claim is held up on the queue's settings row (a rate-limited queue's claim locks it), so that the client
    surely leaves while it runs."""
    with live_server("--database-url", database_url, "--mode", "api") as base, httpx.Client(base_url=base) as http:
        patch = {"rate_limit": {"jobs": 100, "per_seconds": 1}}
        assert http.patch("/v1/queues/held-up", json=patch).status_code == 200
        job = http.post("/v1/jobs", json={"task_name": "t", "queue_name": "held-up"}).json()

        async def leave_during_the_claim() -> tuple[str, int]:
            async with pg.connect(database_url) as blocker, pg.connect(database_url) as watcher:
                sql = "SELECT xmin::text, status, delivery_count FROM queueflow.jobs WHERE id = $1"
                inserted = (await watcher.fetchrow(sql, job["id"]))["xmin"]
                async with blocker.transaction():
                    await blocker.execute(
                        "SELECT FROM queueflow.queue_settings WHERE queue_name = 'held-up' FOR UPDATE"
                    )
                    host, port = base.removeprefix("http://").split(":")
                    _, writer = await asyncio.open_connection(host, int(port))
                    body = b'{"queues": ["held-up"], "wait_seconds": 0, "lease_seconds": 600}'
                    head = f"POST /v1/worker/lease HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                    writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
                    await writer.drain()
                    await until(  # the claim waits for the settings row
                        lambda: watcher.fetchval(
                            "SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                            " AND query LIKE '%queue_settings%' AND pid <> pg_backend_pid()"
                        )
                    )
                    writer.close()  # the worker leaves; the claim goes on once the row is free
                    await writer.wait_closed()

                async def settled() -> bool:  # the claim has written the job, and whatever follows has too
                    row = await watcher.fetchrow(sql, job["id"])
                    return bool(row["xmin"] != inserted and row["status"] != "running")

                await until(settled)
                row = await watcher.fetchrow(sql, job["id"])
                return row["status"], row["delivery_count"]

        # Stranded, it stayed running with its 600 s lease, and this timed out.
        assert asyncio.run(leave_during_the_claim()) == ("pending", 0)
        leased = http.post("/v1/worker/lease", json={"queues": ["held-up"]}).json()["jobs"]
        assert [(j["id"], j["delivery_count"]) for j in leased] == [(job["id"], 1)]


async def until(check: Callable[[], Awaitable[bool]], seconds: float = 10) -> None:
    """Poll another process's state (it announces nothing we could wait on) until `check()` holds."""
    for _ in range(int(seconds / 0.01)):
        if await check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("timed out")
