"""Delivering servers in processes of their own, for the tests and the chaos scenario that kill them."""

from __future__ import annotations

import os
import subprocess
import sys

from queueflow.core.types import JobStatus
from queueflow.stores.postgres import PostgresJobStore

from tests.e2e.live import ROOT


def pushing_server(url: str) -> subprocess.Popen[bytes]:
    """A `queueflow serve --mode worker` process: it delivers, with a fast janitor."""
    return subprocess.Popen(
        [sys.executable, "-m", "queueflow.cli", "serve", "--mode", "worker", "--database-url", url,
         "--allow-private-endpoints", "--janitor-interval", "0.5", "--safety-poll", "0.5"],
        cwd=ROOT, env={**os.environ, "QUEUEFLOW_API_KEYS": "", "QUEUEFLOW_WORKER_KEYS": ""},
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


async def all_completed(store: PostgresJobStore, jobs: list[str]) -> bool:
    found = await store.job_get_many(jobs)
    return len(found) == len(jobs) and all(job.status is JobStatus.COMPLETED for job in found.values())
