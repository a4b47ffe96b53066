"""Jobs expiring under load (issue 43, deadlines) against a real server: `python
bench/pgbench/deadline_expiry_load.py postgresql://…/postgres path/to/queueflow` makes a database of its own
(`queueflow_deadline_load`, dropped and made again), migrates it and serves it in `all` mode on port 8765.

10,000 jobs in 20 batches of 500 (a quarter second apart), each with `expires_in_seconds` drawn from 1–8 s, while 4
lessees lease 20 at a time every 0.2 s (slower than the enqueues: a backlog that outlives deadlines) and complete
what they took. Prints how many were leased at or after their deadline (by the lease's answer and by the table:
must be 0) and, for the expired ones, how long after the deadline the server dead-lettered them (p50, p99, max).
"""

from __future__ import annotations

import asyncio
import random
import statistics
import subprocess
import sys
from datetime import datetime
from typing import Any

import asyncpg
import httpx
from sqlalchemy.engine import make_url

PORT = 8765
DATABASE = "queueflow_deadline_load"
TENANT_KEY = {"Authorization": "Bearer load-a"}
WORKER_KEY = {"Authorization": "Bearer load-w"}


class Lessees:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.leased = 0
        self.late = 0
        self.stop = asyncio.Event()

    async def run(self) -> None:
        while not self.stop.is_set():
            answer = await self.client.post(
                "/v1/worker/lease", json={"queues": ["default"], "max_jobs": 20, "wait_seconds": 0}, headers=WORKER_KEY
            )
            jobs: list[dict[str, Any]] = answer.json()["jobs"]
            self.leased += len(jobs)
            self.late += sum(
                job["expires_at"] is not None
                and datetime.fromisoformat(job["started_at"]) >= datetime.fromisoformat(job["expires_at"])
                for job in jobs
            )
            if jobs:
                done = [{"id": job["id"], "lease_token": job["lease_token"]} for job in jobs]
                await self.client.post("/v1/worker/ack", json={"complete": done}, headers=WORKER_KEY)
            await asyncio.sleep(0.2)


async def enqueue(client: httpx.AsyncClient) -> None:
    rng = random.Random(1)
    for _ in range(20):
        items = [{"task_name": "t", "expires_in_seconds": rng.uniform(1, 8)} for _ in range(500)]
        answer = await client.post("/v1/jobs/batch", json={"jobs": items}, headers=TENANT_KEY)
        assert answer.status_code == 201, answer.text
        await asyncio.sleep(0.25)


async def main(admin_url: str, queueflow: str) -> None:
    admin = await asyncpg.connect(admin_url)
    await admin.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
    await admin.execute(f"CREATE DATABASE {DATABASE}")
    await admin.close()
    url = make_url(admin_url).set(database=DATABASE).render_as_string(hide_password=False)
    migrated = await asyncio.create_subprocess_exec(
        queueflow, "migrate", "--database-url", url, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    assert await migrated.wait() == 0, "queueflow migrate failed"
    server = await asyncio.create_subprocess_exec(
        queueflow, "serve", "--mode", "all", "--port", str(PORT), "--database-url", url, "--api-keys",
        "load-a=acme", "--worker-keys", "load-w", "--access-log", "off",
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{PORT}", timeout=30) as client:
            for _ in range(200):
                try:
                    if (await client.get("/health")).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.1)
            lessees = Lessees(client)
            running = [asyncio.create_task(lessees.run()) for _ in range(4)]
            await enqueue(client)
            await asyncio.sleep(10)  # past the last deadline, and its expiry
            lessees.stop.set()
            await asyncio.gather(*running)
        database = await asyncpg.connect(url)
        lags = sorted(
            row[0]
            for row in await database.fetch(
                "SELECT extract(epoch FROM completed_at - expires_at)::float8 FROM queueflow.jobs"
                " WHERE status = 'dead_letter'"
            )
        )
        left = await database.fetchval("SELECT count(*) FROM queueflow.jobs WHERE status IN ('pending', 'retrying')")
        late = await database.fetchval("SELECT count(*) FROM queueflow.jobs WHERE started_at >= expires_at")
        await database.close()
        print(
            f"10,000 jobs: leased {lessees.leased} (at or after the deadline: {lessees.late} by the answers, {late} in"
            f" the table), expired {len(lags)}, left unstarted {left}"
        )
        print(
            f"dead-lettered after the deadline: p50 {statistics.median(lags):.3f} s,"
            f" p99 {lags[int(len(lags) * 0.99) - 1]:.3f} s, max {lags[-1]:.3f} s"
        )
    finally:
        server.terminate()
        await asyncio.wait_for(server.wait(), 10)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
