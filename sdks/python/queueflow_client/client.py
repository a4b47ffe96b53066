"""`QueueFlow` and `AsyncQueueFlow`: the tenant-side client, sync and async, with the same methods.

    client = QueueFlow("http://127.0.0.1:8000", api_key="key-a")
    job = client.jobs.enqueue("send_email", payload={"to": "ada@example.com"})
    for job in client.jobs.list(status="dead_letter"):
        client.jobs.retry(job.id)

The methods live by resource in `queueflow_client.resources` (`jobs`, `queues`, `workflows`, `schedules`,
`endpoints`, `triggers`, `events`), each module holding its sync and async class side by side; a client only
wires them to its transport. Every method raises a `queueflow_client.errors.QueueFlowError` subclass on failure.
Calls that are safe to repeat are retried on 503s and connection failures (`max_retries` times, exponential
backoff with jitter); `jobs.enqueue`,
`jobs.enqueue_many` and `workflows.create` are made safe by an Idempotency-Key that the client generates when the
caller gives none, and `events.send` by an event id likewise.
"""

from __future__ import annotations

from typing import Self

import httpx

from queueflow_client._transport import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, AsyncTransport, RetryPolicy, SyncTransport
from queueflow_client.resources import (
    AsyncEndpoints,
    AsyncEvents,
    AsyncJobs,
    AsyncQueues,
    AsyncSchedules,
    AsyncSequences,
    AsyncTriggers,
    AsyncWorkflows,
    Endpoints,
    Events,
    Jobs,
    Queues,
    Schedules,
    Sequences,
    Triggers,
    Workflows,
)

__all__ = ["AsyncQueueFlow", "QueueFlow"]


class QueueFlow:
    """The synchronous client. `api_key=None` talks to a development-mode server (no keys configured).

    `http_client` lets you bring your own `httpx.Client` (proxies, TLS, tests); its base URL and headers are set
    from `base_url` and `api_key`, and closing this client leaves it open."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        retry_delay: float = 0.5,
        http_client: httpx.Client | None = None,
    ) -> None:
        retry = RetryPolicy(max_retries=max_retries, base_delay=retry_delay)
        self._transport = SyncTransport(base_url, api_key, timeout=timeout, retry=retry, http_client=http_client)
        self.jobs = Jobs(self._transport)
        self.queues = Queues(self._transport)
        self.workflows = Workflows(self._transport)
        self.schedules = Schedules(self._transport)
        self.endpoints = Endpoints(self._transport)
        self.triggers = Triggers(self._transport)
        self.events = Events(self._transport)
        self.sequences = Sequences(self._transport)

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncQueueFlow:
    """The asyncio client; the same methods as `QueueFlow`, awaited. `http_client`: an `httpx.AsyncClient`."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        retry_delay: float = 0.5,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        retry = RetryPolicy(max_retries=max_retries, base_delay=retry_delay)
        self._transport = AsyncTransport(base_url, api_key, timeout=timeout, retry=retry, http_client=http_client)
        self.jobs = AsyncJobs(self._transport)
        self.queues = AsyncQueues(self._transport)
        self.workflows = AsyncWorkflows(self._transport)
        self.schedules = AsyncSchedules(self._transport)
        self.endpoints = AsyncEndpoints(self._transport)
        self.triggers = AsyncTriggers(self._transport)
        self.events = AsyncEvents(self._transport)
        self.sequences = AsyncSequences(self._transport)

    async def aclose(self) -> None:
        await self._transport.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
