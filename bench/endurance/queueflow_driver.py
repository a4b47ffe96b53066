"""QueueFlow's side of the endurance run, one program per role (`bench.endurance.wire` says what each prints):

    python -m bench.endurance.queueflow_driver produce URL TENANT_KEY QUEUE
    python -m bench.endurance.queueflow_driver work URL WORKER_KEY QUEUE --concurrency 32 --lease 30

The producer enqueues through `POST /v1/jobs/batch` with the bench's light HTTP client (on 2 cores an SDK client's
CPU would come out of the server's share), but as the SDK does: every job carries an idempotency key, so a batch
whose answer was lost is sent again without duplicates, and the key's unique index costs what it costs users. The
worker is the Python SDK's `Worker`, default settings but its slots (and, in the smoke profile, a short lease, so
that jobs a killed worker held come back within the run).
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
from typing import Any

import msgspec

from bench.endurance import wire
from bench.httpclient import Connection

TASK = "endurance"


async def _produce(url: str, key: str, queue: str) -> None:
    host, port = url.removeprefix("http://").split(":")
    idle = [Connection(host, int(port), key) for _ in range(wire.SENDERS)]
    prefix = f"endurance-{secrets.token_hex(4)}"

    async def send(batch: list[dict[str, Any]]) -> None:
        body = msgspec.json.encode(
            {
                "jobs": [
                    {"task_name": TASK, "queue_name": queue, "payload": job, "idempotency_key": f"{prefix}-{job['n']}"}
                    for job in batch
                ]
            }
        )
        connection = idle.pop()
        try:
            await connection.post("/v1/jobs/batch", body, 201, decode=False)
        except BaseException:
            await connection.close()  # an answer may be half read: the next request starts on a new connection
            raise
        finally:
            idle.append(connection)

    await wire.produce(send)


def _work(url: str, key: str, queue: str, concurrency: int, lease_seconds: float) -> None:
    from queueflow_client import JobContext, TaskRegistry, Worker  # the producer starts without the SDK's imports

    tasks = TaskRegistry()
    reporter = wire.Reporter()

    @tasks.task(TASK)
    async def endurance(payload: dict[str, Any], ctx: JobContext) -> None:
        await wire.run_job(reporter, payload)

    worker = Worker(url, key, tasks, queues=[queue], concurrency=concurrency, lease_seconds=lease_seconds)
    wire.emit(wire.READY)
    worker.run()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.endurance.queueflow_driver")
    parser.add_argument("role", choices=("produce", "work"))
    parser.add_argument("url")
    parser.add_argument("key")
    parser.add_argument("queue")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--lease", type=float, default=30.0)
    args = parser.parse_args()
    if args.role == "produce":
        asyncio.run(_produce(args.url, args.key, args.queue))
    else:
        _work(args.url, args.key, args.queue, args.concurrency, args.lease)


if __name__ == "__main__":
    main()
