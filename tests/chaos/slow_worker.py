"""`python -m tests.chaos.slow_worker BASE_URL WORKER_KEY QUEUE CONCURRENCY PREFETCH SECONDS`: a Python SDK worker
whose one task, `slow`, takes SECONDS; for the probe of a stop while it holds many jobs it has not started."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

from queueflow_client import JobContext, TaskRegistry, Worker


def main() -> None:
    base_url, key, queue, concurrency, prefetch, seconds = sys.argv[1:7]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s slow-worker %(levelname)s %(message)s")
    tasks = TaskRegistry()

    @tasks.task("slow")
    async def slow(payload: dict[str, Any], ctx: JobContext) -> None:
        await asyncio.sleep(float(seconds))  # the task's own duration

    Worker(base_url, key, tasks, queues=[queue], concurrency=int(concurrency), prefetch=int(prefetch)).run()


if __name__ == "__main__":
    main()
