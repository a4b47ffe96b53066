"""InMemoryJobStore: the whole `Store` contract in a process's memory, for tests and embedding.

Its schedules live in `memory_schedules`.

It is a real store, not a mock: it validates what it is given before it changes anything, so a call that
fails leaves no trace, and it rejects exactly the values PostgreSQL would reject. Each method runs without
awaiting, so on one event loop every call is atomic.
"""

from __future__ import annotations

import copy
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from queueflow.core.advance import NewStepJob, Transition, record
from queueflow.core.errors import FieldError, ValidationError
from queueflow.core.jsonvalue import (
    completion_storage_errors,
    contains,
    failure_storage_errors,
    job_storage_errors,
    workflow_storage_errors,
)
from queueflow.core.lifecycle import holds_lease, lease_until
from queueflow.core.types import (
    CANCELLABLE,
    CLAIMABLE,
    FINISHED,
    JSON,
    RETRIABLE,
    Completion,
    Cursor,
    Failure,
    Job,
    JobFilter,
    JobStatus,
    QueueCounts,
    QueueMinute,
)
from queueflow.core.workflow import StepStatus, Workflow, WorkflowStatus
from queueflow.runtime.wakeups import Wakeups
from queueflow.stores.memory_schedules import InMemoryScheduleStore

# `queue_throughput` counts these endings, under these names.
_ENDED = {JobStatus.COMPLETED: "completed", JobStatus.DEAD_LETTER: "dead_lettered"}


class InMemoryJobStore(InMemoryScheduleStore):
    def __init__(self, wakeups: Wakeups | None = None) -> None:
        super().__init__()
        self._jobs: dict[str, Job] = {}
        self._idempotency: dict[tuple[str, str], str] = {}
        self._workflows: dict[str, Workflow] = {}
        self._workflow_keys: dict[tuple[str, str], str] = {}
        self._wakeups = wakeups

    def reset(self) -> None:
        """Forget every job, workflow and schedule."""
        self._jobs.clear()
        self._idempotency.clear()
        self._workflows.clear()
        self._workflow_keys.clear()
        self._schedules.clear()

    async def ping(self) -> None:
        """Always answers: memory is always there."""

    async def job_insert_many(self, jobs: Sequence[Job]) -> list[tuple[Job, bool]]:
        self._check_insert(jobs)
        return self._insert(jobs)

    def _check_insert(self, jobs: Sequence[Job]) -> None:
        errors: list[FieldError] = []
        for index, job in enumerate(jobs):
            if job.id in self._jobs or any(other.id == job.id for other in jobs[:index]):
                loc = ("jobs", index) if len(jobs) > 1 else ()
                errors.append(FieldError((*loc, "id"), f"duplicate job id {job.id}"))
        errors += job_storage_errors(jobs)
        if errors:
            raise ValidationError.of(errors)

    def _insert(self, jobs: Sequence[Job]) -> list[tuple[Job, bool]]:
        """Insert checked `jobs` (see `_check_insert`)."""
        results: list[tuple[Job, bool]] = []
        for job in jobs:
            key = (job.tenant_id, job.idempotency_key) if job.idempotency_key is not None else None
            if key is not None and key in self._idempotency:
                results.append((self._out(self._jobs[self._idempotency[key]]), False))
                continue
            stored = replace(
                job,
                payload=copy.deepcopy(job.payload),
                metadata=copy.deepcopy(job.metadata),
                status=JobStatus.PENDING,
            )
            self._jobs[job.id] = stored
            if key is not None:
                self._idempotency[key] = job.id
            results.append((self._out(stored), True))
        if self._wakeups is not None:
            # As PostgreSQL's AFTER INSERT trigger does: one wake-up per queue that received rows.
            for queue in {job.queue_name for job, created in results if created}:
                self._wakeups.notify(queue)
        return results

    async def job_get(self, job_id: str, tenant_id: str | None = None) -> Job | None:
        job = self._jobs.get(job_id)
        if job is None or (tenant_id is not None and job.tenant_id != tenant_id):
            return None
        return self._out(job)

    async def job_get_many(self, job_ids: Sequence[str]) -> dict[str, Job]:
        return {job_id: self._out(self._jobs[job_id]) for job_id in job_ids if job_id in self._jobs}

    async def job_list(self, tenant_id: str, where: JobFilter, limit: int, after: Cursor | None) -> list[Job]:
        rows = [job for job in self._jobs.values() if job.tenant_id == tenant_id and _matches(job, where)]
        if after is not None:
            rows = [job for job in rows if (job.created_at, job.id) < (after.created_at, after.id)]
        rows.sort(key=lambda job: (job.created_at, job.id), reverse=True)
        return [self._out(job) for job in rows[:limit]]

    async def job_claim(self, queues: Sequence[str], limit: int, now: datetime, lease_seconds: float) -> list[Job]:
        wanted = set(queues)
        due = [
            job
            for job in self._jobs.values()
            if job.queue_name in wanted and job.status in CLAIMABLE and job.scheduled_at <= now
        ]
        due.sort(key=lambda job: (-job.priority, job.scheduled_at, job.created_at, job.id))
        claimed = []
        for job in due[:limit]:
            running = replace(
                job,
                status=JobStatus.RUNNING,
                lease_token=str(uuid.uuid4()),
                delivery_count=job.delivery_count + 1,
                started_at=now,
            )
            running = replace(running, locked_until=lease_until(running, now, lease_seconds))
            self._jobs[job.id] = running
            claimed.append(self._out(running))
        return claimed

    async def job_heartbeat(self, job_id: str, lease_token: str, now: datetime, lease_seconds: float) -> Job | None:
        job = self._jobs.get(job_id)
        if job is None or not holds_lease(job, lease_token, now):
            return None
        job = self._jobs[job_id] = replace(job, locked_until=lease_until(job, now, lease_seconds))
        return self._out(job)

    async def job_complete_many(self, completions: Sequence[Completion], now: datetime) -> list[Job | None]:
        if errors := completion_storage_errors(completions):
            raise ValidationError.of(errors)
        return [
            self._finish(
                item.job_id,
                item.lease_token,
                now,
                status=JobStatus.COMPLETED,
                result=copy.deepcopy(item.result),
                completed_at=now,
            )
            for item in completions
        ]

    async def job_fail_many(self, failures: Sequence[Failure], now: datetime) -> list[Job | None]:
        if errors := failure_storage_errors(failures):
            raise ValidationError.of(errors)
        results: list[Job | None] = []
        for item in failures:
            job = self._jobs.get(item.job_id)
            if item.retry_at is None:
                results.append(
                    self._finish(
                        item.job_id, item.lease_token, now, status=JobStatus.DEAD_LETTER,
                        error_message=item.error, completed_at=now,
                    )
                )  # fmt: skip
            else:
                results.append(
                    self._finish(
                        item.job_id, item.lease_token, now, status=JobStatus.RETRYING, error_message=item.error,
                        retry_count=(job.retry_count + 1) if job else 0,
                        scheduled_at=item.retry_at, next_retry_at=item.retry_at,
                    )
                )  # fmt: skip
        return results

    def _finish(self, job_id: str, lease_token: str, now: datetime, **changes: JSON) -> Job | None:
        """End the delivery held by `lease_token`, applying `changes`; None when the lease is not held."""
        job = self._jobs.get(job_id)
        if job is None or not holds_lease(job, lease_token, now):
            return None
        job = self._jobs[job_id] = replace(job, lease_token=None, locked_until=None, **changes)
        return self._out(job)

    async def job_cancel(self, tenant_id: str, job_id: str, now: datetime) -> Job | None:
        job = self._jobs.get(job_id)
        if job is None or job.tenant_id != tenant_id or job.status not in CANCELLABLE:
            return None
        job = self._jobs[job_id] = replace(
            job, status=JobStatus.CANCELLED, lease_token=None, locked_until=None, completed_at=now
        )
        return self._out(job)

    async def job_retry(self, tenant_id: str, job_id: str, now: datetime) -> Job | None:
        job = self._jobs.get(job_id)
        if job is None or job.tenant_id != tenant_id or job.status not in RETRIABLE:
            return None
        job = self._jobs[job_id] = replace(
            job,
            status=JobStatus.PENDING,
            retry_count=0,
            scheduled_at=now,
            next_retry_at=None,
            completed_at=None,
        )
        return self._out(job)

    async def job_lease_expired(self, now: datetime, limit: int, relock_seconds: float) -> list[Job]:
        expired = [
            job
            for job in self._jobs.values()
            if job.status is JobStatus.RUNNING and job.locked_until is not None and job.locked_until <= now
        ]
        expired.sort(key=lambda job: (job.locked_until or now, job.id))
        relocked = []
        for job in expired[:limit]:
            job = self._jobs[job.id] = replace(job, locked_until=now + timedelta(seconds=relock_seconds))
            relocked.append(self._out(job))
        return relocked

    async def job_delete_finished(self, before: datetime, limit: int) -> int:
        doomed = [
            job
            for job in self._jobs.values()
            if job.status in FINISHED
            and job.completed_at is not None
            and job.completed_at < before
            and not self._in_running_workflow(job)
        ]
        doomed.sort(key=lambda job: job.completed_at or before)
        for job in doomed[:limit]:
            del self._jobs[job.id]
            if job.idempotency_key is not None:
                self._idempotency.pop((job.tenant_id, job.idempotency_key), None)
        return len(doomed[:limit])

    async def queue_counts(self, tenant_id: str, now: datetime) -> list[QueueCounts]:
        counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        oldest: dict[str, datetime] = {}
        for job in self._tenant_jobs(tenant_id):
            queue = counts[job.queue_name]
            if job.status in CLAIMABLE:
                if job.scheduled_at <= now:
                    queue["pending"] += 1
                    if job.queue_name not in oldest or job.scheduled_at < oldest[job.queue_name]:
                        oldest[job.queue_name] = job.scheduled_at
                else:
                    queue["scheduled"] += 1
            if job.status not in (JobStatus.PENDING,):
                queue[job.status.value] += 1
        return [
            QueueCounts(name=name, oldest_due_at=oldest.get(name), **by_state)
            for name, by_state in sorted(counts.items())
        ]

    async def queue_throughput(self, tenant_id: str, since: datetime) -> list[QueueMinute]:
        counts: dict[tuple[str, datetime], dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for job in self._tenant_jobs(tenant_id):
            if job.status in _ENDED and job.completed_at is not None and job.completed_at >= since:
                minute = job.completed_at.astimezone(UTC).replace(second=0, microsecond=0)
                counts[job.queue_name, minute][_ENDED[job.status]] += 1
        return [QueueMinute(name=name, minute=minute, **by_end) for (name, minute), by_end in sorted(counts.items())]

    def _in_running_workflow(self, job: Job) -> bool:
        workflow = self._workflows.get(job.workflow_id) if job.workflow_id is not None else None
        return workflow is not None and workflow.status is WorkflowStatus.RUNNING

    # ---- workflows ----------------------------------------------------------------------------------

    async def workflow_insert(self, workflow: Workflow, jobs: Sequence[Job]) -> tuple[Workflow, bool]:
        key = (workflow.tenant_id, workflow.idempotency_key) if workflow.idempotency_key is not None else None
        if key is not None and key in self._workflow_keys:
            return self._workflow_out(self._workflows[self._workflow_keys[key]]), False
        errors = workflow_storage_errors(workflow)
        if workflow.id in self._workflows:
            errors.append(FieldError(("id",), f"duplicate workflow id {workflow.id}"))
        if errors:
            raise ValidationError.of(errors)
        self._check_insert(jobs)
        self._workflows[workflow.id] = copy.deepcopy(workflow)
        if key is not None:
            self._workflow_keys[key] = workflow.id
        self._insert(jobs)
        return self._workflow_out(workflow), True

    async def workflow_get(self, workflow_id: str, tenant_id: str | None = None) -> Workflow | None:
        workflow = self._workflows.get(workflow_id)
        if workflow is None or (tenant_id is not None and workflow.tenant_id != tenant_id):
            return None
        return self._workflow_out(workflow)

    async def workflow_list(
        self, tenant_id: str, status: WorkflowStatus | None, limit: int, after: Cursor | None
    ) -> list[Workflow]:
        rows = [
            workflow
            for workflow in self._workflows.values()
            if workflow.tenant_id == tenant_id and (status is None or workflow.status is status)
        ]
        if after is not None:
            rows = [row for row in rows if (row.created_at, row.id) < (after.created_at, after.id)]
        rows.sort(key=lambda row: (row.created_at, row.id), reverse=True)
        return [self._workflow_out(row) for row in rows[:limit]]

    async def workflow_advance(
        self,
        workflow_id: str,
        decide: Callable[[Workflow], Transition],
        new_job: NewStepJob,
        now: datetime,
        tenant_id: str | None = None,
    ) -> Workflow | None:
        # No await from here on: on one event loop this is as good as the PostgreSQL store's row lock.
        workflow = self._workflows.get(workflow_id)
        if workflow is None or (tenant_id is not None and workflow.tenant_id != tenant_id):
            return None
        recording = record(self._workflow_out(workflow), decide(self._workflow_out(workflow)), now, new_job)
        # Only the new jobs need a check: the context gains only results already stored on their jobs.
        self._check_insert(recording.jobs)
        self._workflows[workflow_id] = copy.deepcopy(recording.workflow)
        self._insert(recording.jobs)
        for job_id in recording.cancel_jobs:
            job = self._jobs.get(job_id)
            if job is not None and job.status in CANCELLABLE:
                self._jobs[job_id] = replace(
                    job, status=JobStatus.CANCELLED, lease_token=None, locked_until=None, completed_at=now
                )
        return self._workflow_out(recording.workflow)

    async def workflow_stalled_jobs(self, limit: int) -> list[Job]:
        stalled = [
            self._out(job)
            for workflow in self._workflows.values()
            if workflow.status is WorkflowStatus.RUNNING
            for step in workflow.steps
            if step.status is StepStatus.ENQUEUED
            and step.job_id is not None
            and (job := self._jobs.get(step.job_id)) is not None
            and job.status in FINISHED
        ]
        return stalled[:limit]

    @staticmethod
    def _workflow_out(workflow: Workflow) -> Workflow:
        return copy.deepcopy(workflow)

    def _tenant_jobs(self, tenant_id: str) -> Iterable[Job]:
        return (job for job in self._jobs.values() if job.tenant_id == tenant_id)

    @staticmethod
    def _out(job: Job) -> Job:
        # Callers get their own copy of the JSON, so mutating a returned job never edits the store.
        return replace(
            job,
            payload=copy.deepcopy(job.payload),
            metadata=copy.deepcopy(job.metadata),
            result=copy.deepcopy(job.result),
        )


def _matches(job: Job, where: JobFilter) -> bool:
    return (
        (where.queue_name is None or job.queue_name == where.queue_name)
        and (where.status is None or job.status is where.status)
        and (where.task_name is None or job.task_name == where.task_name)
        and (where.workflow_id is None or job.workflow_id == where.workflow_id)
        and (where.metadata is None or contains(job.metadata, where.metadata))
    )
