"""The job state machine: which transitions are allowed, and what a failure turns into.

    pending ──claim──▶ running ──complete──▶ completed
       ▲  ▲               │ ├──fail, budget left──▶ retrying ──claim──▶ running …
       │  │               │ └──fail, no budget / not retryable──▶ dead_letter
       │  └──retry────────┼──────────────────────────────────── dead_letter | cancelled
       │                  └──lease expired (janitor) = a retryable failure
    pending | retrying | running ──cancel──▶ cancelled

    ∅ ──enqueue──▶ pending (due now) | pending with a future scheduled_at (delayed)
    pending | retrying, not started by expires_at ──timer──▶ dead_letter (`core.deadlines`)

A delivery is one claim. `retry_count` counts failed deliveries that were given another try, so a job is
delivered at most `max_retries + 1` times before it dead-letters.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from queueflow.core.backoff import RandomSource, backoff_delay
from queueflow.core.deadlines import expires_at_of
from queueflow.core.ids import IdSource
from queueflow.core.types import Job, JobStatus, NewJob, OnFailure


def pending_job(tenant_id: str, job: NewJob, now: datetime, ids: IdSource, *, job_id: str | None = None) -> Job:
    """∅ → pending: the row a validated `job` is inserted as, due at its `run_at` or after its delay, with the id
    `job_id` (one of a batch's `new_ids`), or a new one."""
    return pending_row(tenant_id, job, now, job_id if job_id is not None else ids.new_id("job", now))


def pending_row(tenant_id: str, job: NewJob, now: datetime, job_id: str) -> Job:
    """`pending_job` with the id `job_id` the caller minted (a store, for a step's job)."""
    if job.unique is not None and job.unique.debounce_seconds is not None:
        scheduled_at = now + timedelta(seconds=job.unique.debounce_seconds)  # run_at and a delay are not allowed
    elif job.run_at is not None:
        scheduled_at = job.run_at.astimezone(now.tzinfo)
    elif job.delay_seconds:
        scheduled_at = now + timedelta(seconds=job.delay_seconds)
    else:
        scheduled_at = now  # no arithmetic per row of a batch; and one shared value, which the store sends once
    return Job(
        id=job_id,
        tenant_id=tenant_id,
        queue_name=job.queue_name,
        task_name=job.task_name,
        payload=job.payload,
        status=JobStatus.PENDING,
        priority=job.priority,
        scheduled_at=scheduled_at,
        max_retries=job.max_retries,
        backoff=job.backoff,
        timeout_seconds=float(job.timeout_seconds) if job.timeout_seconds is not None else None,
        metadata=job.metadata,
        idempotency_key=job.idempotency_key,
        concurrency_key=job.concurrency_key,
        unique_key=job.unique.key if job.unique is not None else None,
        expires_at=expires_at_of(job, now),
        created_at=now,
        trace_context=job.trace_context,
        sequence_key=job.sequence.key if job.sequence is not None else None,
        sequence_on_failure=job.sequence.on_failure if job.sequence is not None else None,
        sequence_halt=job.sequence is not None and job.sequence.on_failure is OnFailure.HALT,
    )


def lease_until(job: Job, now: datetime, lease_seconds: float) -> datetime:
    """A lease of `lease_seconds` from `now`, never past the current delivery's timeout deadline."""
    until = now + timedelta(seconds=lease_seconds)
    deadline = job.deadline
    return until if deadline is None else min(until, deadline)


def lease_expired(job: Job, now: datetime) -> bool:
    return job.locked_until is None or job.locked_until <= now


def holds_lease(job: Job, lease_token: str, now: datetime) -> bool:
    """Whether `lease_token` owns `job` at `now`: the row's current token on a running, unexpired lease."""
    return job.status is JobStatus.RUNNING and job.lease_token == lease_token and not lease_expired(job, now)


def retry_at(
    job: Job,
    now: datetime,
    *,
    retryable: bool,
    rng: RandomSource,
    retry_after_seconds: float | None = None,
) -> datetime | None:
    """When a failed delivery of `job` runs again, or None when it dead-letters instead."""
    if not retryable or job.retry_count >= job.max_retries:
        return None
    delay = retry_after_seconds if retry_after_seconds is not None else backoff_delay(job.backoff, job.retry_count, rng)
    return now + timedelta(seconds=delay)


def expiry_reason(job: Job, now: datetime) -> str:
    """The error recorded when the janitor reclaims `job`: its timeout, or a worker that went silent."""
    deadline = job.deadline
    if deadline is not None and deadline <= now:
        return f"timed out after {job.timeout_seconds:g} s"
    return "lease expired: the worker stopped heartbeating"
