"""`client.jobs`: enqueue, read, wait for, list, cancel and replay jobs (`Jobs` sync, `AsyncJobs` async)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, TypedDict, Unpack

from queueflow_client import _calls
from queueflow_client._transport import Call
from queueflow_client._waiting import FINISHED_JOB, async_wait, wait
from queueflow_client.options import EnqueueOptions, JobOptions
from queueflow_client.resources._base import DEFAULT_PAGE, Resource, apages, pages
from queueflow_client.types import Job, JobStatus, Page

__all__ = ["AsyncJobs", "JobFilters", "Jobs"]


class JobFilters(TypedDict, total=False):
    """Which jobs `jobs.list` and `jobs.list_page` answer (None: any)."""

    queue_name: str | None
    status: JobStatus | None
    task_name: str | None
    workflow_id: str | None
    metadata: Mapping[str, Any] | None
    """Jobs whose metadata contains this object."""
    unique_key: str | None
    """Jobs enqueued with this `unique` key."""
    sequence_key: str | None
    """Jobs of this sequence."""


def _list_call(filters: JobFilters, limit: int, cursor: str | None) -> Call[Page[Job]]:
    return _calls.list_page(
        queue_name=filters.get("queue_name"),
        status=filters.get("status"),
        task_name=filters.get("task_name"),
        workflow_id=filters.get("workflow_id"),
        metadata=filters.get("metadata"),
        unique_key=filters.get("unique_key"),
        sequence_key=filters.get("sequence_key"),
        limit=limit,
        cursor=cursor,
    )


def _checked(filters: Mapping[str, Any]) -> JobFilters:
    unknown = set(filters) - JobFilters.__optional_keys__
    if unknown:
        raise TypeError(f"unknown job filter(s): {', '.join(sorted(unknown))}")
    return filters  # type: ignore[return-value]


class Jobs(Resource):
    def enqueue(
        self, task_name: str, *, payload: Mapping[str, Any] | None = None, **options: Unpack[EnqueueOptions]
    ) -> Job:
        """Enqueue one job. With a known `idempotency_key` the server answers with the original job, unchanged."""
        result: Job = self._send(_calls.enqueue({"task_name": task_name, "payload": payload, **options}))
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
        self,
        task_name: str,
        payload: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        **options: Unpack[EnqueueOptions],
    ) -> Job:
        """Enqueue a job (`options` as for `enqueue`) and wait for it to finish (`wait`): `job.result` is its result."""
        job = self.enqueue(task_name, payload=payload, **options)
        return self.wait(job.id, timeout=timeout)

    def list_page(self, *, limit: int = 50, cursor: str | None = None, **filters: Unpack[JobFilters]) -> Page[Job]:
        """One page of the tenant's jobs, newest first; `metadata` matches jobs whose metadata contains it."""
        result: Page[Job] = self._send(_list_call(_checked(filters), limit, cursor))
        return result

    def list(self, *, page_size: int = DEFAULT_PAGE, **filters: Unpack[JobFilters]) -> Iterator[Job]:
        """Every matching job, newest first, fetching pages of `page_size` as the iteration needs them."""
        checked = _checked(filters)
        return pages(lambda cursor: self._send(_list_call(checked, page_size, cursor)))

    def cancel(self, job_id: str) -> Job:
        """Cancel an unfinished job (a running job's worker loses its lease); InvalidStateError once finished."""
        result: Job = self._send(_calls.cancel(job_id))
        return result

    def retry(self, job_id: str) -> Job:
        """Replay a dead-lettered or cancelled job now, with a fresh retry budget."""
        result: Job = self._send(_calls.retry(job_id))
        return result


class AsyncJobs(Resource):
    """`Jobs`, awaited."""

    async def enqueue(
        self, task_name: str, *, payload: Mapping[str, Any] | None = None, **options: Unpack[EnqueueOptions]
    ) -> Job:
        """Enqueue one job. With a known `idempotency_key` the server answers with the original job, unchanged."""
        result: Job = await self._send(_calls.enqueue({"task_name": task_name, "payload": payload, **options}))
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
        **options: Unpack[EnqueueOptions],
    ) -> Job:
        """Enqueue a job (`options` as for `enqueue`) and wait for it to finish (`wait`): `job.result` is its result."""
        job = await self.enqueue(task_name, payload=payload, **options)
        return await self.wait(job.id, timeout=timeout)

    async def list_page(
        self, *, limit: int = 50, cursor: str | None = None, **filters: Unpack[JobFilters]
    ) -> Page[Job]:
        """One page of the tenant's jobs, newest first; `metadata` matches jobs whose metadata contains it."""
        result: Page[Job] = await self._send(_list_call(_checked(filters), limit, cursor))
        return result

    def list(self, *, page_size: int = DEFAULT_PAGE, **filters: Unpack[JobFilters]) -> AsyncIterator[Job]:
        """Every matching job, newest first (`async for`), fetching pages of `page_size` as needed."""
        checked = _checked(filters)
        return apages(lambda cursor: self._send(_list_call(checked, page_size, cursor)))

    async def cancel(self, job_id: str) -> Job:
        """Cancel an unfinished job (a running job's worker loses its lease); InvalidStateError once finished."""
        result: Job = await self._send(_calls.cancel(job_id))
        return result

    async def retry(self, job_id: str) -> Job:
        """Replay a dead-lettered or cancelled job now, with a fresh retry budget."""
        result: Job = await self._send(_calls.retry(job_id))
        return result
