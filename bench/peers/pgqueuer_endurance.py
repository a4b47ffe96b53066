"""PgQueuer's side of the endurance run (`make endurance`), on its own database. Run by bench/.peers-venv's Python
from the repository's root, as a module (it shares `bench.endurance.wire`, standard library only, with QueueFlow's
drivers; that module says what each role prints):

    python -m bench.peers.pgqueuer_endurance install URL
    python -m bench.peers.pgqueuer_endurance produce URL
    python -m bench.peers.pgqueuer_endurance work URL --concurrency 32

PgQueuer's documented shape: one connection per process, `Queries.enqueue` of a batch, an entrypoint run by
`PgQueuer.run` with `max_concurrent_tasks` as the worker's slots (batch_size left at its default). It has no
reconnect of its own: a worker whose connection is cut exits, and the harness starts it again as a process manager
would; the producer opens a new connection and sends the batch again (PgQueuer has no idempotent enqueue, so a batch
whose commit landed before the cut is enqueued twice: the harness counts those as second deliveries).
"""

from __future__ import annotations

import json
from typing import Any

import asyncpg
from pgqueuer import PgQueuer
from pgqueuer.models import Job
from pgqueuer.queries import Queries

from bench.endurance import wire

ENTRYPOINT = "endurance"


async def install(url: str) -> None:
    connection = await asyncpg.connect(url)
    try:
        queries = Queries.from_asyncpg_connection(connection)
        if not await queries.has_table("pgqueuer"):
            await queries.install()
    finally:
        await connection.close()


async def produce(url: str) -> None:
    """An asyncpg connection per enqueue in flight (a connection runs one statement at a time)."""
    idle: list[asyncpg.Connection | None] = [None] * wire.SENDERS

    async def send(batch: list[dict[str, Any]]) -> None:
        connection = idle.pop()
        try:
            if connection is None or connection.is_closed():
                connection = await asyncpg.connect(url)
            await Queries.from_asyncpg_connection(connection).enqueue(
                [ENTRYPOINT] * len(batch), [json.dumps(job).encode() for job in batch], [0] * len(batch)
            )
        except BaseException:
            if connection is not None:
                connection.terminate()  # cut or in an unknown state: the next enqueue opens a new one
                connection = None
            raise
        finally:
            idle.append(connection)

    await wire.produce(send)


async def work(url: str, concurrency: int) -> None:
    connection = await asyncpg.connect(url)
    pgq = PgQueuer.from_asyncpg_connection(connection)
    reporter = wire.Reporter()

    @pgq.entrypoint(ENTRYPOINT)
    async def endurance(job: Job) -> None:
        assert job.payload is not None
        await wire.run_job(reporter, json.loads(job.payload))

    wire.emit(wire.READY)
    await pgq.run(max_concurrent_tasks=concurrency)


if __name__ == "__main__":
    wire.peer_main("python -m bench.peers.pgqueuer_endurance", install, produce, work)
