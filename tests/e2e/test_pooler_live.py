"""A real `queueflow serve` behind PgBouncer in transaction mode, configured from the environment as a deployment
would be: `QUEUEFLOW_STATEMENT_CACHE_SIZE=0`, and `QUEUEFLOW_LISTEN_DATABASE_URL` past the pooler for wake-ups.

A job enqueued by another process can wake a parked lease only through NOTIFY (this server's own inserts wake it
directly): through the pooler a LISTEN hears nothing, so without the listen URL that wake-up waits for the safety
poll, and with it the wake-up is immediate.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator

import httpx
import pytest
from queueflow.clocks import TestClock
from queueflow.core.types import NewJob
from queueflow.stores.postgres import PostgresJobStore

from tests import pg, pgbouncer
from tests.e2e.live import live_server
from tests.moments import START
from tests.postgres.helpers import engine_on

if pgbouncer.binary() is None and not os.environ.get("CI"):
    pytest.skip("no pgbouncer (`make test` installs Debian's when it runs as root)", allow_module_level=True)

TENANT = "tenant-a"
KEYS = {"QUEUEFLOW_API_KEYS": f"key-a={TENANT}", "QUEUEFLOW_WORKER_KEYS": "key-w"}
WORKER = {"Authorization": "Bearer key-w"}
TENANT_A = {"Authorization": "Bearer key-a"}


@pytest.fixture
def direct_url() -> Iterator[str]:
    url = pg.blocking(pg.create_database)
    try:
        yield url
    finally:
        pg.blocking(lambda: pg.drop_database(url))


@pytest.mark.parametrize(
    ("listen", "safety_poll", "limit"),
    [("direct", 30.0, 5.0), ("through the pooler", 1.0, 5.0)],
    ids=["listen past the pooler", "safety poll only"],
)
async def test_a_server_behind_a_transaction_pooler_serves_and_wakes(
    direct_url: str, listen: str, safety_poll: float, limit: float
) -> None:
    with pgbouncer.PgBouncer(direct_url, pool_size=3) as bouncer:
        through = bouncer.url(pg.database_of(direct_url))
        env = {**KEYS, "QUEUEFLOW_DATABASE_URL": through, "QUEUEFLOW_STATEMENT_CACHE_SIZE": "0"}
        if listen == "direct":
            env["QUEUEFLOW_LISTEN_DATABASE_URL"] = direct_url
        with live_server("--safety-poll", str(safety_poll), env=env) as base:
            async with httpx.AsyncClient(base_url=base, timeout=60) as http:
                # The API's own statements, many at once, through the pooler.
                new = {"task_name": "t", "queue_name": "api"}
                created = await asyncio.gather(*(http.post("/v1/jobs", json=new, headers=TENANT_A) for _ in range(20)))
                assert [r.status_code for r in created] == [201] * 20
                leased = await http.post("/v1/worker/lease", json={"queues": ["api"], "max_jobs": 20}, headers=WORKER)
                jobs = leased.json()["jobs"]
                done = await asyncio.gather(*(complete(http, j) for j in jobs))
                assert (len(jobs), {r.status_code for r in done}) == (20, {200})

                # A parked lease, and a job from another process (straight into the database).
                parked = asyncio.create_task(
                    http.post("/v1/worker/lease", json={"queues": ["woken"], "wait_seconds": 20}, headers=WORKER)
                )
                await until_parked(http)
                started = time.monotonic()
                async with PostgresJobStore.from_url(direct_url, pool_size=1) as store:
                    engine = engine_on(store, TestClock(START))
                    job = (await engine.enqueue(TENANT, NewJob(task_name="t", queue_name="woken"))).job
                response = await parked
                waited = time.monotonic() - started
    assert [j["id"] for j in response.json()["jobs"]] == [job.id]
    assert waited < limit, f"the parked lease took {waited:.2f} s to wake"


async def complete(http: httpx.AsyncClient, job: dict[str, str]) -> httpx.Response:
    return await http.post(
        f"/v1/worker/jobs/{job['id']}/complete", json={"lease_token": job["lease_token"]}, headers=WORKER
    )


async def until_parked(http: httpx.AsyncClient) -> None:
    """The server is another process: poll its parked-lease gauge, with a deadline."""
    async with asyncio.timeout(10):
        while True:
            if "queueflow_lease_waiters 1.0" in (await http.get("/metrics")).text:
                return
            await asyncio.sleep(0.01)  # a poll of the condition itself, not a guess at how long it takes
