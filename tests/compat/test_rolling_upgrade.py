"""A rolling deploy on PostgreSQL (docs/compatibility.md): two servers of the previous release, on a database it
migrated, enqueue and run jobs (their in-process runners) while today's server starts on the same database —
migrating it, under the advisory lock every server takes — and enqueues and runs jobs beside them; then the old
servers are stopped (SIGTERM) one after the other, as a deploy stops them. Every job completes, each ran exactly
once, and no request on either side answered a 5xx."""

from __future__ import annotations

import asyncio
import subprocess
from contextlib import ExitStack
from pathlib import Path

import httpx

from tests import pg
from tests.compat.previous import ROOT, server_venv
from tests.e2e.live import live_server

TASKS = ("--mode", "all", "--tasks", "tests.compat.rolling_tasks:tasks", "--task-concurrency", "4")
BATCH = 50
ROUNDS = 4


async def enqueue(http: httpx.AsyncClient, base: str, round_: int, statuses: list[int]) -> list[str]:
    """`BATCH` jobs through `base`'s API: their ids."""
    items = [{"task_name": "record", "payload": {"round": round_, "n": n}} for n in range(BATCH)]
    answer = await http.post(f"{base}/v1/jobs/batch", json={"jobs": items})
    statuses.append(answer.status_code)
    answer.raise_for_status()
    return [job["id"] for job in answer.json()["jobs"]]


async def test_a_rolling_upgrade_runs_every_job_once_with_no_5xx(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.touch()
    env = {"QUEUEFLOW_COMPAT_RUNS": str(runs), "QUEUEFLOW_DRAIN_SECONDS": "30"}
    old = server_venv()
    statuses: list[int] = []
    async with pg.fresh_database() as database:
        migrate = [str(old / "queueflow"), "migrate", "--database-url", database]
        await asyncio.to_thread(subprocess.run, migrate, cwd=ROOT, check=True)
        flags = ("--database-url", database, *TASKS)
        with ExitStack() as olds, ExitStack() as news:
            first = olds.enter_context(live_server(*flags, env=env, python=old / "python"))
            second = olds.enter_context(live_server(*flags, env=env, python=old / "python"))
            async with httpx.AsyncClient(timeout=30) as http:
                ids = await enqueue(http, first, 0, statuses)
                ids += await enqueue(http, second, 1, statuses)
                # Today's server starts while the old ones run and take jobs: it migrates the same database.
                today = news.enter_context(live_server(*flags, env=env))
                for round_ in range(2, 2 + ROUNDS):
                    answered = await asyncio.gather(
                        *(enqueue(http, base, round_, statuses) for base in (first, second, today))
                    )
                    ids += [job_id for batch in answered for job_id in batch]
                olds.close()  # SIGTERM to the old servers, as a deploy stops them: each drains what it runs
                ids += await enqueue(http, today, 99, statuses)
                finished = await until_finished(http, today, ids)
    assert all(status < 500 for status in statuses), statuses
    assert finished == {"completed": len(ids)}
    ran = runs.read_text().split()
    assert sorted(ran) == sorted(ids), "every job ran exactly once"


async def until_finished(http: httpx.AsyncClient, base: str, ids: list[str], within: float = 60) -> dict[str, int]:
    """The count of `ids` by status once none is pending or running (or after `within` seconds)."""
    counts: dict[str, int] = {}
    async with asyncio.timeout(within):
        while True:
            counts = {}
            for job_id in ids:
                answer = await http.get(f"{base}/v1/jobs/{job_id}")
                answer.raise_for_status()
                status = answer.json()["status"]
                counts[status] = counts.get(status, 0) + 1
            if set(counts) <= {"completed", "dead_letter", "cancelled"}:
                return counts
            await asyncio.sleep(0.2)  # a real deploy in other processes: polling is all there is
