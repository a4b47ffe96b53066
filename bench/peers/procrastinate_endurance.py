"""Procrastinate's side of the endurance run (`make endurance`), on its own database. Run by bench/.peers-venv's
Python from the repository's root, as a module (it shares `bench.endurance.wire`, standard library only, with
QueueFlow's drivers; that module says what each role prints):

    python -m bench.peers.procrastinate_endurance install URL
    python -m bench.peers.procrastinate_endurance produce URL
    python -m bench.peers.procrastinate_endurance work URL --concurrency 32

Procrastinate's documented shape: an `App` on a `PsycopgConnector` (a psycopg pool), jobs deferred in batches
(`batch_defer_async`), one worker (`run_worker_async`) with `concurrency` slots, its other settings at their
defaults (finished jobs are kept, as QueueFlow keeps them). A batch whose enqueue failed is deferred again; one whose
commit landed before a cut connection is then enqueued twice (the harness counts those as second deliveries).
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from procrastinate import App, PsycopgConnector

from bench.endurance import wire

TASK = "endurance"
reporter = wire.Reporter()


def make_app(url: str) -> App:
    app = App(connector=PsycopgConnector(conninfo=url))

    @app.task(name=TASK)
    async def endurance(**body: Any) -> None:
        await wire.run_job(reporter, body)

    return app


async def install(url: str) -> None:
    app = make_app(url)
    async with app.open_async(), await psycopg.AsyncConnection.connect(url, autocommit=True) as db:
        installed = (await (await db.execute("SELECT to_regclass('procrastinate_jobs')")).fetchone() or [None])[0]
        if installed is None:
            await app.schema_manager.apply_schema_async()


async def produce(url: str) -> None:
    app = make_app(url)
    async with app.open_async():
        task = app.tasks[TASK]

        async def send(batch: list[dict[str, Any]]) -> None:
            await task.batch_defer_async(*batch)

        await wire.produce(send)


async def work(url: str, concurrency: int) -> None:
    app = make_app(url)
    async with app.open_async():
        wire.emit(wire.READY)
        await app.run_worker_async(concurrency=concurrency)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    # It warns that the app lives in __main__ (task names would differ when imported elsewhere): not the case here.
    logging.getLogger("procrastinate.blueprints").setLevel(logging.ERROR)
    wire.peer_main("python -m bench.peers.procrastinate_endurance", install, produce, work)
