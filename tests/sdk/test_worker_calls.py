"""The SDK's typed worker calls (`queueflow_client._calls`) against the app in-process."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import httpx
from queueflow.clocks import TestClock
from queueflow_client import AsyncQueueFlow, _calls
from queueflow_client._transport import AsyncTransport, RetryPolicy
from queueflow_client.types import HeartbeatResult

from tests.sdk.conftest import BASE


async def test_heartbeat_many_answers_each_lease_on_its_own(
    client: AsyncQueueFlow, http: Callable[[], httpx.AsyncClient], clock: TestClock
) -> None:
    await client.jobs.enqueue("t")
    async with http() as raw:
        transport = AsyncTransport(BASE, "key-w", timeout=30.0, retry=RetryPolicy(), http_client=raw)
        (job,) = await transport(
            _calls.lease(["default"], max_jobs=1, lease_seconds=10, wait_seconds=0, worker_id=None)
        )
        clock.advance(5)
        results = await transport(_calls.heartbeat_many([(job.id, job.lease_token), (job.id, "stale")], 60))
    assert results == [
        HeartbeatResult(job.id, "ok", clock.now() + timedelta(seconds=60)),
        HeartbeatResult(job.id, "lease_lost", None),
    ]
