"""Procrastinate on its own database: enqueue rows/s (batch_defer, 1,000 a call) and drain jobs/s (one worker,
no-op async task). Run by bench/.peers-venv's Python; prints one JSON line.

    procrastinate_run.py DATABASE_URL --jobs 1500 --concurrency 4 --repetitions 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import time

import psycopg
from procrastinate import App, PsycopgConnector

CALL = 1000


def make_app(url: str) -> App:
    app = App(connector=PsycopgConnector(conninfo=url))

    @app.task(name="noop")
    async def noop() -> None:
        return None

    return app


async def run(url: str, jobs: int, concurrency: int, repetitions: int) -> dict[str, list[float]]:
    app = make_app(url)
    enqueue_rates, drain_rates = [], []
    async with app.open_async():
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as db:
            installed = (await (await db.execute("SELECT to_regclass('procrastinate_jobs')")).fetchone())[0]
            if installed is None:
                await app.schema_manager.apply_schema_async()
        task = app.tasks["noop"]
        for _ in range(repetitions):
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as db:
                await db.execute("TRUNCATE procrastinate_jobs CASCADE")
                await db.execute("VACUUM (ANALYZE) procrastinate_jobs")
            started = time.perf_counter()
            for start in range(0, jobs, CALL):
                await task.batch_defer_async(*({} for _ in range(min(CALL, jobs - start))))
            enqueue_rates.append(jobs / (time.perf_counter() - started))
            started = time.perf_counter()
            await app.run_worker_async(wait=False, concurrency=concurrency, install_signal_handlers=False)
            drain_rates.append(jobs / (time.perf_counter() - started))
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as db:
                cursor = await db.execute("SELECT count(*) FROM procrastinate_jobs WHERE status <> 'succeeded'")
                remaining = (await cursor.fetchone())[0]
            if remaining:
                raise RuntimeError(f"Procrastinate drain left {remaining} jobs")
    return {"enqueue": enqueue_rates, "drain": drain_rates}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--jobs", type=int, default=1_500)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--repetitions", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    # It warns that the app lives in __main__ (task names would differ when imported elsewhere): not the case here.
    logging.getLogger("procrastinate.blueprints").setLevel(logging.ERROR)
    print(json.dumps(asyncio.run(run(args.url, args.jobs, args.concurrency, args.repetitions))))


if __name__ == "__main__":
    main()
