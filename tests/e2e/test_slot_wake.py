"""On PostgreSQL, across connections: a lease that a queue's concurrency limit held back wakes as soon as the
running job ends, through the NOTIFY its ending sends, not on the safety poll (set here to 30 s)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from tests import pg
from tests.e2e.live import live_server

KEYS = {"QUEUEFLOW_API_KEYS": "key-a=tenant-a", "QUEUEFLOW_WORKER_KEYS": "key-w"}
TENANT = {"Authorization": "Bearer key-a"}
WORKER = {"Authorization": "Bearer key-w"}


@pytest.fixture
async def database() -> AsyncIterator[str]:
    async with pg.fresh_database() as url:
        yield url


@pytest.mark.parametrize("ending", ["ack", "cancel"])
async def test_a_held_back_lease_wakes_when_the_running_job_ends(database: str, ending: str) -> None:
    flags = ("--database-url", database, "--mode", "all", "--safety-poll", "30")
    with live_server(*flags, env=KEYS) as base:
        async with httpx.AsyncClient(base_url=base, timeout=60) as http:
            limited = await http.patch("/v1/queues/mail", json={"concurrency_limit": 1}, headers=TENANT)
            assert limited.status_code == 200, limited.text
            for _ in range(2):
                assert (
                    await http.post("/v1/jobs", json={"task_name": "t", "queue_name": "mail"}, headers=TENANT)
                ).status_code == 201
            lease = {"queues": ["mail"], "max_jobs": 10}
            (running,) = (await http.post("/v1/worker/lease", json=lease, headers=WORKER)).json()["jobs"]
            parked = asyncio.create_task(
                http.post("/v1/worker/lease", json={**lease, "wait_seconds": 20}, headers=WORKER)
            )
            # The server is another process that announces nothing we could wait on: its parked-lease gauge is read.
            while "queueflow_lease_waiters 1.0" not in (await http.get("/metrics")).text:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            started = time.monotonic()
            if ending == "ack":
                body = {"complete": [{"id": running["id"], "lease_token": running["lease_token"], "result": None}]}
                ended = await http.post("/v1/worker/ack", json=body, headers=WORKER)
            else:
                ended = await http.post(f"/v1/jobs/{running['id']}/cancel", headers=TENANT)
            assert ended.status_code == 200, ended.text
            answer = await parked
            took = time.monotonic() - started
    (woken,) = answer.json()["jobs"]
    assert woken["id"] != running["id"]
    assert took < 2.0, f"the held-back lease waited {took:.1f} s"
