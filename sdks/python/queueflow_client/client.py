"""`QueueFlow` and `AsyncQueueFlow`: the tenant-side client, sync and async, with the same methods.

    client = QueueFlow("http://127.0.0.1:8000", api_key="key-a")
    job = client.jobs.enqueue("send_email", payload={"to": "ada@example.com"})
    for job in client.jobs.list(status="dead_letter"):
        client.jobs.retry(job.id)

Every method raises a `queueflow_client.errors.QueueFlowError` subclass on failure. Calls that are safe to
repeat are retried on 503s and connection failures (`max_retries` times, exponential backoff with jitter);
`jobs.enqueue`, `jobs.enqueue_many` and `workflows.create` are made safe by an Idempotency-Key that the client
generates when the caller gives none.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Self, TypeVar

import httpx

from queueflow_client import _calls
from queueflow_client._calls import JobOptions
from queueflow_client._transport import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    AsyncTransport,
    Call,
    RetryPolicy,
    SyncTransport,
)
from queueflow_client._waiting import FINISHED_JOB, async_wait, chunk_for, wait
from queueflow_client.types import (
    UNCHANGED,
    Backoff,
    Job,
    JobStatus,
    Page,
    Queue,
    RateLimit,
    Schedule,
    Step,
    Unchanged,
    Workflow,
    WorkflowStatus,
)

T = TypeVar("T")
DEFAULT_PAGE = 100


def _enqueue_options(task_name: str, **options: Any) -> dict[str, Any]:
    return {"task_name": task_name, **options}


def _pages(fetch: Callable[[str | None], Page[T]]) -> Iterator[T]:
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        yield from page.items
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


async def _apages(fetch: Callable[[str | None], Any]) -> AsyncIterator[Any]:
    cursor: str | None = None
    while True:
        page = await fetch(cursor)
        for item in page.items:
            yield item
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


# ---- sync ------------------------------------------------------------------------------------------


class Jobs:
    def __init__(self, send: Callable[[Call[Any]], Any]) -> None:
        self._send = send
        self._chunk = chunk_for(send)

    def enqueue(
        self,
        task_name: str,
        *,
        payload: Mapping[str, Any] | None = None,
        queue_name: str | None = None,
        priority: int | None = None,
        run_at: datetime | None = None,
        delay_seconds: float | None = None,
        max_retries: int | None = None,
        backoff: Backoff | Mapping[str, Any] | None = None,
        timeout_seconds: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        concurrency_key: str | None = None,
    ) -> Job:
        """Enqueue one job. With a known `idempotency_key` the server answers with the original job, unchanged."""
        options = {key: value for key, value in locals().items() if key not in ("self", "task_name")}
        result: Job = self._send(_calls.enqueue(_enqueue_options(task_name, **options)))
        return result

    def enqueue_many(self, jobs: Sequence[JobOptions]) -> list[Job]:
        """Enqueue 1–1000 jobs, all or none; each item takes `enqueue`'s arguments as keys."""
        result: list[Job] = self._send(_calls.enqueue_many(jobs))
        return result

    def get(self, job_id: str) -> Job:
        return self._get(job_id)

    def _get(self, job_id: str, wait_seconds: float = 0.0) -> Job:
        result: Job = self._send(_calls.get(job_id, wait_seconds))
        return result

    def wait(self, job_id: str, *, timeout: float | None = None) -> Job:
        """The job once it has finished (completed, dead_letter or cancelled), answered by the server as soon as
        it does: no polling. `timeout` seconds (None: no limit) and still unfinished: TimeoutError."""
        return wait(
            lambda seconds: self._get(job_id, seconds),
            lambda job: job.status in FINISHED_JOB,
            timeout,
            self._chunk,
            f"job {job_id}",
        )

    def run(
        self, task_name: str, payload: Mapping[str, Any] | None = None, *, timeout: float | None = None, **options: Any
    ) -> Job:
        """Enqueue a job (`options` as for `enqueue`) and wait for it to finish (`wait`): `job.result` is its result."""
        job = self.enqueue(task_name, payload=payload, **options)
        return self.wait(job.id, timeout=timeout)

    def list_page(
        self,
        *,
        queue_name: str | None = None,
        status: JobStatus | None = None,
        task_name: str | None = None,
        workflow_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Job]:
        """One page of the tenant's jobs, newest first; `metadata` matches jobs whose metadata contains it."""
        options = {key: value for key, value in locals().items() if key != "self"}
        result: Page[Job] = self._send(_calls.list_page(**options))
        return result

    def list(
        self,
        *,
        queue_name: str | None = None,
        status: JobStatus | None = None,
        task_name: str | None = None,
        workflow_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        page_size: int = DEFAULT_PAGE,
    ) -> Iterator[Job]:
        """Every matching job, newest first, fetching pages of `page_size` as the iteration needs them."""
        filters = {key: value for key, value in locals().items() if key not in ("self", "page_size")}
        return _pages(lambda cursor: self.list_page(**filters, limit=page_size, cursor=cursor))

    def cancel(self, job_id: str) -> Job:
        """Cancel an unfinished job (a running job's worker loses its lease); InvalidStateError once finished."""
        result: Job = self._send(_calls.cancel(job_id))
        return result

    def retry(self, job_id: str) -> Job:
        """Replay a dead-lettered or cancelled job now, with a fresh retry budget."""
        result: Job = self._send(_calls.retry(job_id))
        return result


class Queues:
    def __init__(self, send: Callable[[Call[Any]], Any]) -> None:
        self._send = send

    def list(self) -> list[Queue]:
        """Every queue of the tenant with its counts by state."""
        result: list[Queue] = self._send(_calls.queues())
        return result

    def get(self, name: str) -> Queue:
        """One queue's counts and flow-control settings (NotFoundError: no jobs and no settings)."""
        result: Queue = self._send(_calls.get_queue(name))
        return result

    def update(
        self,
        name: str,
        *,
        paused: bool | Unchanged = UNCHANGED,
        concurrency_limit: int | Unchanged | None = UNCHANGED,
        key_concurrency_limit: int | Unchanged | None = UNCHANGED,
        rate_limit: RateLimit | Unchanged | None = UNCHANGED,
    ) -> Queue:
        """Change some of a queue's flow-control settings: what is not given stays, None removes a limit."""
        result: Queue = self._send(
            _calls.update_queue(
                name,
                paused=paused,
                concurrency_limit=concurrency_limit,
                key_concurrency_limit=key_concurrency_limit,
                rate_limit=rate_limit,
            )
        )
        return result

    def pause(self, name: str) -> Queue:
        """Lease none of the tenant's jobs in this queue until `resume` (enqueue and running jobs go on)."""
        return self.update(name, paused=True)

    def resume(self, name: str) -> Queue:
        """Lease the queue's jobs again; parked workers take them at once."""
        return self.update(name, paused=False)


class Workflows:
    def __init__(self, send: Callable[[Call[Any]], Any]) -> None:
        self._send = send
        self._chunk = chunk_for(send)

    def create(
        self,
        name: str,
        steps: Sequence[Step | Mapping[str, Any]],
        *,
        context: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Workflow:
        """Create a DAG of steps and enqueue its root steps (ValidationError for a cycle or unknown dependency)."""
        result: Workflow = self._send(_calls.create_workflow(name, steps, context, idempotency_key))
        return result

    def get(self, workflow_id: str) -> Workflow:
        return self._get(workflow_id)

    def _get(self, workflow_id: str, wait_seconds: float = 0.0) -> Workflow:
        result: Workflow = self._send(_calls.get_workflow(workflow_id, wait_seconds))
        return result

    def wait(self, workflow_id: str, *, timeout: float | None = None) -> Workflow:
        """The workflow once it is no longer running, answered as soon as it finishes; TimeoutError after `timeout`."""
        return wait(
            lambda seconds: self._get(workflow_id, seconds),
            lambda workflow: workflow.status != "running",
            timeout,
            self._chunk,
            f"workflow {workflow_id}",
        )

    def list_page(
        self, *, status: WorkflowStatus | None = None, limit: int = 50, cursor: str | None = None
    ) -> Page[Workflow]:
        result: Page[Workflow] = self._send(_calls.list_workflows(status, limit, cursor))
        return result

    def list(self, *, status: WorkflowStatus | None = None, page_size: int = DEFAULT_PAGE) -> Iterator[Workflow]:
        """Every workflow (with `status`, if given), newest first."""
        return _pages(lambda cursor: self.list_page(status=status, limit=page_size, cursor=cursor))

    def cancel(self, workflow_id: str) -> Workflow:
        """Cancel a running workflow: every unfinished step and its job."""
        result: Workflow = self._send(_calls.cancel_workflow(workflow_id))
        return result


class Schedules:
    def __init__(self, send: Callable[[Call[Any]], Any]) -> None:
        self._send = send

    def create(
        self,
        name: str,
        *,
        cron: str,
        task_name: str,
        timezone: str | None = None,
        queue_name: str | None = None,
        payload: Mapping[str, Any] | None = None,
        priority: int | None = None,
        max_retries: int | None = None,
        enabled: bool | None = None,
    ) -> Schedule:
        """Create a cron schedule; a name already in use is an InvalidStateError."""
        fields = {key: value for key, value in locals().items() if key not in ("self", "name")}
        result: Schedule = self._send(_calls.create_schedule(name, fields))
        return result

    def get(self, name: str) -> Schedule:
        result: Schedule = self._send(_calls.get_schedule(name))
        return result

    def list_page(self, *, limit: int = 50, cursor: str | None = None) -> Page[Schedule]:
        result: Page[Schedule] = self._send(_calls.list_schedules(limit, cursor))
        return result

    def list(self, *, page_size: int = DEFAULT_PAGE) -> Iterator[Schedule]:
        return _pages(lambda cursor: self.list_page(limit=page_size, cursor=cursor))

    def update(
        self,
        name: str,
        *,
        cron: str | None = None,
        timezone: str | None = None,
        task_name: str | None = None,
        queue_name: str | None = None,
        payload: Mapping[str, Any] | None = None,
        priority: int | None = None,
        max_retries: int | None = None,
        enabled: bool | None = None,
    ) -> Schedule:
        """Change the given fields (the others stay as they are)."""
        fields = {key: value for key, value in locals().items() if key not in ("self", "name")}
        result: Schedule = self._send(_calls.update_schedule(name, fields))
        return result

    def delete(self, name: str) -> None:
        self._send(_calls.delete_schedule(name))


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
        self._transport = SyncTransport(
            base_url,
            api_key,
            timeout=timeout,
            retry=RetryPolicy(max_retries=max_retries, base_delay=retry_delay),
            http_client=http_client,
        )
        self.jobs = Jobs(self._transport)
        self.queues = Queues(self._transport)
        self.workflows = Workflows(self._transport)
        self.schedules = Schedules(self._transport)

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# ---- async -----------------------------------------------------------------------------------------


class AsyncJobs:
    def __init__(self, send: Callable[[Call[Any]], Any]) -> None:
        self._send = send
        self._chunk = chunk_for(send)

    async def enqueue(
        self,
        task_name: str,
        *,
        payload: Mapping[str, Any] | None = None,
        queue_name: str | None = None,
        priority: int | None = None,
        run_at: datetime | None = None,
        delay_seconds: float | None = None,
        max_retries: int | None = None,
        backoff: Backoff | Mapping[str, Any] | None = None,
        timeout_seconds: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        concurrency_key: str | None = None,
    ) -> Job:
        """Enqueue one job. With a known `idempotency_key` the server answers with the original job, unchanged."""
        options = {key: value for key, value in locals().items() if key not in ("self", "task_name")}
        result: Job = await self._send(_calls.enqueue(_enqueue_options(task_name, **options)))
        return result

    async def enqueue_many(self, jobs: Sequence[JobOptions]) -> list[Job]:
        """Enqueue 1–1000 jobs, all or none; each item takes `enqueue`'s arguments as keys."""
        result: list[Job] = await self._send(_calls.enqueue_many(jobs))
        return result

    async def get(self, job_id: str) -> Job:
        result: Job = await self._send(_calls.get(job_id))
        return result

    # `timeout`, not asyncio.timeout: the same method, with the same argument, as the sync client's.
    async def wait(self, job_id: str, *, timeout: float | None = None) -> Job:  # noqa: ASYNC109
        """The job once it has finished (completed, dead_letter or cancelled), answered by the server as soon as
        it does: no polling. `timeout` seconds (None: no limit) and still unfinished: TimeoutError."""
        return await async_wait(
            lambda seconds: self._send(_calls.get(job_id, seconds)),
            lambda job: job.status in FINISHED_JOB,
            timeout,
            self._chunk,
            f"job {job_id}",
        )

    async def run(
        self,
        task_name: str,
        payload: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (as `wait`)
        **options: Any,
    ) -> Job:
        """Enqueue a job (`options` as for `enqueue`) and wait for it to finish (`wait`): `job.result` is its result."""
        job = await self.enqueue(task_name, payload=payload, **options)
        return await self.wait(job.id, timeout=timeout)

    async def list_page(
        self,
        *,
        queue_name: str | None = None,
        status: JobStatus | None = None,
        task_name: str | None = None,
        workflow_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Job]:
        """One page of the tenant's jobs, newest first; `metadata` matches jobs whose metadata contains it."""
        options = {key: value for key, value in locals().items() if key != "self"}
        result: Page[Job] = await self._send(_calls.list_page(**options))
        return result

    def list(
        self,
        *,
        queue_name: str | None = None,
        status: JobStatus | None = None,
        task_name: str | None = None,
        workflow_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        page_size: int = DEFAULT_PAGE,
    ) -> AsyncIterator[Job]:
        """Every matching job, newest first (`async for`), fetching pages of `page_size` as needed."""
        filters = {key: value for key, value in locals().items() if key not in ("self", "page_size")}
        return _apages(lambda cursor: self.list_page(**filters, limit=page_size, cursor=cursor))

    async def cancel(self, job_id: str) -> Job:
        """Cancel an unfinished job (a running job's worker loses its lease); InvalidStateError once finished."""
        result: Job = await self._send(_calls.cancel(job_id))
        return result

    async def retry(self, job_id: str) -> Job:
        """Replay a dead-lettered or cancelled job now, with a fresh retry budget."""
        result: Job = await self._send(_calls.retry(job_id))
        return result


class AsyncQueues:
    def __init__(self, send: Callable[[Call[Any]], Any]) -> None:
        self._send = send

    async def list(self) -> list[Queue]:
        """Every queue of the tenant with its counts by state."""
        result: list[Queue] = await self._send(_calls.queues())
        return result

    async def get(self, name: str) -> Queue:
        """One queue's counts and flow-control settings (NotFoundError: no jobs and no settings)."""
        result: Queue = await self._send(_calls.get_queue(name))
        return result

    async def update(
        self,
        name: str,
        *,
        paused: bool | Unchanged = UNCHANGED,
        concurrency_limit: int | Unchanged | None = UNCHANGED,
        key_concurrency_limit: int | Unchanged | None = UNCHANGED,
        rate_limit: RateLimit | Unchanged | None = UNCHANGED,
    ) -> Queue:
        """Change some of a queue's flow-control settings: what is not given stays, None removes a limit."""
        result: Queue = await self._send(
            _calls.update_queue(
                name,
                paused=paused,
                concurrency_limit=concurrency_limit,
                key_concurrency_limit=key_concurrency_limit,
                rate_limit=rate_limit,
            )
        )
        return result

    async def pause(self, name: str) -> Queue:
        """Lease none of the tenant's jobs in this queue until `resume` (enqueue and running jobs go on)."""
        return await self.update(name, paused=True)

    async def resume(self, name: str) -> Queue:
        """Lease the queue's jobs again; parked workers take them at once."""
        return await self.update(name, paused=False)


class AsyncWorkflows:
    def __init__(self, send: Callable[[Call[Any]], Any]) -> None:
        self._send = send
        self._chunk = chunk_for(send)

    async def create(
        self,
        name: str,
        steps: Sequence[Step | Mapping[str, Any]],
        *,
        context: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Workflow:
        """Create a DAG of steps and enqueue its root steps (ValidationError for a cycle or unknown dependency)."""
        result: Workflow = await self._send(_calls.create_workflow(name, steps, context, idempotency_key))
        return result

    async def get(self, workflow_id: str) -> Workflow:
        result: Workflow = await self._send(_calls.get_workflow(workflow_id))
        return result

    async def wait(self, workflow_id: str, *, timeout: float | None = None) -> Workflow:  # noqa: ASYNC109
        """The workflow once it is no longer running, answered as soon as it finishes; TimeoutError after `timeout`."""
        return await async_wait(
            lambda seconds: self._send(_calls.get_workflow(workflow_id, seconds)),
            lambda workflow: workflow.status != "running",
            timeout,
            self._chunk,
            f"workflow {workflow_id}",
        )

    async def list_page(
        self, *, status: WorkflowStatus | None = None, limit: int = 50, cursor: str | None = None
    ) -> Page[Workflow]:
        result: Page[Workflow] = await self._send(_calls.list_workflows(status, limit, cursor))
        return result

    def list(self, *, status: WorkflowStatus | None = None, page_size: int = DEFAULT_PAGE) -> AsyncIterator[Workflow]:
        """Every workflow (with `status`, if given), newest first."""
        return _apages(lambda cursor: self.list_page(status=status, limit=page_size, cursor=cursor))

    async def cancel(self, workflow_id: str) -> Workflow:
        """Cancel a running workflow: every unfinished step and its job."""
        result: Workflow = await self._send(_calls.cancel_workflow(workflow_id))
        return result


class AsyncSchedules:
    def __init__(self, send: Callable[[Call[Any]], Any]) -> None:
        self._send = send

    async def create(
        self,
        name: str,
        *,
        cron: str,
        task_name: str,
        timezone: str | None = None,
        queue_name: str | None = None,
        payload: Mapping[str, Any] | None = None,
        priority: int | None = None,
        max_retries: int | None = None,
        enabled: bool | None = None,
    ) -> Schedule:
        """Create a cron schedule; a name already in use is an InvalidStateError."""
        fields = {key: value for key, value in locals().items() if key not in ("self", "name")}
        result: Schedule = await self._send(_calls.create_schedule(name, fields))
        return result

    async def get(self, name: str) -> Schedule:
        result: Schedule = await self._send(_calls.get_schedule(name))
        return result

    async def list_page(self, *, limit: int = 50, cursor: str | None = None) -> Page[Schedule]:
        result: Page[Schedule] = await self._send(_calls.list_schedules(limit, cursor))
        return result

    def list(self, *, page_size: int = DEFAULT_PAGE) -> AsyncIterator[Schedule]:
        return _apages(lambda cursor: self.list_page(limit=page_size, cursor=cursor))

    async def update(
        self,
        name: str,
        *,
        cron: str | None = None,
        timezone: str | None = None,
        task_name: str | None = None,
        queue_name: str | None = None,
        payload: Mapping[str, Any] | None = None,
        priority: int | None = None,
        max_retries: int | None = None,
        enabled: bool | None = None,
    ) -> Schedule:
        """Change the given fields (the others stay as they are)."""
        fields = {key: value for key, value in locals().items() if key not in ("self", "name")}
        result: Schedule = await self._send(_calls.update_schedule(name, fields))
        return result

    async def delete(self, name: str) -> None:
        await self._send(_calls.delete_schedule(name))


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
        self._transport = AsyncTransport(
            base_url,
            api_key,
            timeout=timeout,
            retry=RetryPolicy(max_retries=max_retries, base_delay=retry_delay),
            http_client=http_client,
        )
        self.jobs = AsyncJobs(self._transport)
        self.queues = AsyncQueues(self._transport)
        self.workflows = AsyncWorkflows(self._transport)
        self.schedules = AsyncSchedules(self._transport)

    async def aclose(self) -> None:
        await self._transport.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
