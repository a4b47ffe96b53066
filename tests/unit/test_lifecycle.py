from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from msgspec.structs import replace
from queueflow.core.lifecycle import expiry_reason, holds_lease, lease_until, retry_at
from queueflow.core.types import BackoffPolicy, Job, JobStatus

NOW = datetime(2026, 5, 1, tzinfo=UTC)
RNG = random.Random(0)


def running(**changes: object) -> Job:
    job = Job(
        id="job_1",
        tenant_id="t",
        queue_name="default",
        task_name="x",
        payload={},
        status=JobStatus.RUNNING,
        priority=0,
        scheduled_at=NOW,
        max_retries=2,
        backoff=BackoffPolicy(base_seconds=4, jitter=False),
        timeout_seconds=None,
        metadata={},
        created_at=NOW,
        lease_token="tok",
        locked_until=NOW + timedelta(seconds=30),
        started_at=NOW,
        delivery_count=1,
    )
    return replace(job, **changes)  # type: ignore[arg-type]


def test_lease_is_capped_at_the_deadline() -> None:
    job = running(timeout_seconds=45.0)
    assert job.deadline == NOW + timedelta(seconds=45)
    assert lease_until(job, NOW, 30) == NOW + timedelta(seconds=30)
    assert lease_until(job, NOW + timedelta(seconds=20), 30) == NOW + timedelta(seconds=45)
    assert lease_until(running(), NOW + timedelta(seconds=20), 30) == NOW + timedelta(seconds=50)


def test_only_a_running_job_has_a_deadline() -> None:
    assert running(timeout_seconds=5.0, status=JobStatus.RETRYING).deadline is None


def test_holding_a_lease_needs_the_token_and_time() -> None:
    job = running()
    assert holds_lease(job, "tok", NOW)
    assert not holds_lease(job, "other", NOW)
    assert not holds_lease(job, "tok", NOW + timedelta(seconds=30))
    assert not holds_lease(replace(job, status=JobStatus.COMPLETED), "tok", NOW)


def test_retry_while_budget_is_left() -> None:
    assert retry_at(running(), NOW, retryable=True, rng=RNG) == NOW + timedelta(seconds=4)
    assert retry_at(running(retry_count=1), NOW, retryable=True, rng=RNG) == NOW + timedelta(seconds=8)
    assert retry_at(running(retry_count=2), NOW, retryable=True, rng=RNG) is None


def test_not_retryable_dead_letters_and_retry_after_overrides() -> None:
    assert retry_at(running(), NOW, retryable=False, rng=RNG) is None
    assert retry_at(running(), NOW, retryable=True, rng=RNG, retry_after_seconds=0) == NOW
    assert retry_at(running(max_retries=0), NOW, retryable=True, rng=RNG, retry_after_seconds=9) is None


def test_expiry_reason() -> None:
    assert expiry_reason(running(), NOW + timedelta(minutes=1)).startswith("lease expired")
    assert expiry_reason(running(timeout_seconds=1.5), NOW + timedelta(seconds=2)) == "timed out after 1.5 s"
