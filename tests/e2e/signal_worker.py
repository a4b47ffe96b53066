"""`python -m tests.e2e.signal_worker URL [KEY]`: a Python SDK worker as a script runs it, logging not configured,
for test_worker_signals. Its outcomes wait to be sent (a minute, or a thousand of them), so only the shutdown can
have sent them."""

from __future__ import annotations

import sys
import threading
from typing import Any

from queueflow_client import JobContext, TaskRegistry, Worker

tasks = TaskRegistry()


@tasks.task("fast")
async def fast(payload: dict[str, Any], ctx: JobContext) -> str:
    return "done"


@tasks.task("boom")
def boom(payload: dict[str, Any], ctx: JobContext) -> None:
    raise ValueError("boom")


@tasks.task("block")
def block(payload: dict[str, Any], ctx: JobContext) -> None:
    print("blocking", flush=True)
    threading.Event().wait()  # a sync task that never returns: only a second Ctrl-C ends the worker


if __name__ == "__main__":
    url, *key = sys.argv[1:]
    Worker(url, key[0] if key else None, tasks, concurrency=4, wait_seconds=1, ack_interval=60, ack_batch=1000).run()
