"""The wire shapes of the worker routes: leases, heartbeats, and the outcomes of leased jobs, one or many at once."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from queueflow.api.schemas.common import (
    NO_NUL,
    QUEUE_NAME_SCHEMA,
    TASK_NAME_SCHEMA,
    DelaySeconds,
    ErrorText,
    JobId,
    JobStatusName,
    LeaseSeconds,
    LeaseToken,
    QueueName,
    RequestBody,
    TaskName,
)
from queueflow.api.schemas.jobs import Job, job_fields
from queueflow.core import types as domain
from queueflow.core import validation


class LeaseRequest(RequestBody):
    queues: Annotated[
        list[QueueName],
        Meta(
            min_length=1,
            max_length=validation.MAX_LEASE_QUEUES,
            # Litestar documents no constraint of a list's items; `extra` puts the queue-name rules back.
            extra_json_schema={"extra": {"items": QUEUE_NAME_SCHEMA}},
        ),
    ]
    max_jobs: Annotated[int, Meta(ge=1, le=validation.MAX_BATCH)] = 1
    lease_seconds: LeaseSeconds = 30.0
    wait_seconds: Annotated[float, Meta(ge=0, le=60)] = 0.0
    worker_id: Annotated[str, Meta(min_length=1, max_length=200, pattern=NO_NUL)] | None = None
    task_names: (
        Annotated[
            list[TaskName],
            Meta(
                min_length=1,
                max_length=validation.MAX_BATCH,
                extra_json_schema={"extra": {"items": TASK_NAME_SCHEMA}},  # as for queues: Litestar drops them
            ),
        ]
        | None
    ) = None
    """Lease only jobs of these tasks (the ones this worker can run); absent: any."""


class LeasedJob(Job, kw_only=True):
    """A job as its worker sees it: with the lease token that proves ownership and the delivery's deadline."""

    lease_token: str
    deadline: datetime | None
    claimed_after_seconds: float = 0.0
    """How long after the lease request arrived the server claimed this job (0 unless the request waited for
    work): its lease and deadline began at least this long after the request was sent, as a worker can count on its
    own clock. (Added after 0.1.0, so not required: a client of an older server counts 0.)"""

    @classmethod
    def from_domain(cls, job: domain.Job, claimed_after: float = 0.0) -> LeasedJob:
        return cls(
            **job_fields(job),
            lease_token=job.lease_token or "",
            deadline=job.deadline,
            claimed_after_seconds=claimed_after,
        )


class LeasedJobs(Struct):
    jobs: list[LeasedJob]


class HeartbeatRequest(RequestBody):
    lease_token: LeaseToken
    lease_seconds: LeaseSeconds = 30.0
    progress: Any | UnsetType = msgspec.field(default=UNSET)
    """Any JSON value (at most 64 KiB encoded): replaces the job's progress. Absent: the progress stays as it is."""


class Heartbeat(Struct):
    locked_until: datetime


class HeartbeatItem(RequestBody):
    id: JobId
    lease_token: LeaseToken
    progress: Any | UnsetType = msgspec.field(default=UNSET)
    """Any JSON value (at most 64 KiB encoded): replaces the job's progress. Absent: the progress stays as it is."""


class HeartbeatBatch(RequestBody):
    jobs: Annotated[list[HeartbeatItem], Meta(min_length=1, max_length=validation.MAX_BATCH)]
    lease_seconds: LeaseSeconds = 30.0

    def to_domain(self) -> list[domain.HeldLease]:
        return [
            domain.HeldLease(item.id, item.lease_token, domain.UNCHANGED if item.progress is UNSET else item.progress)
            for item in self.jobs
        ]


class HeartbeatResult(Struct):
    id: str
    outcome: Literal["ok", "lease_lost"]
    locked_until: datetime | None

    @classmethod
    def from_domain(cls, result: domain.HeartbeatResult) -> HeartbeatResult:
        return cls(result.id, result.outcome.value, result.locked_until)


class HeartbeatResults(Struct):
    results: list[HeartbeatResult]


class CompleteRequest(RequestBody):
    lease_token: LeaseToken
    result: Any = None


class FailRequest(RequestBody):
    lease_token: LeaseToken
    error: ErrorText
    retryable: bool = True
    retry_after_seconds: DelaySeconds | None = None

    def to_domain(self, job_id: str) -> domain.FailureRequest:
        return domain.FailureRequest(
            job_id=job_id,
            lease_token=self.lease_token,
            error=self.error,
            retryable=self.retryable,
            retry_after_seconds=self.retry_after_seconds,
        )


class AckComplete(CompleteRequest, kw_only=True):
    id: JobId


class AckFail(FailRequest, kw_only=True):
    id: JobId


class AckRequest(RequestBody):
    complete: Annotated[list[AckComplete], Meta(max_length=validation.MAX_BATCH)] = msgspec.field(default_factory=list)
    fail: Annotated[list[AckFail], Meta(max_length=validation.MAX_BATCH)] = msgspec.field(default_factory=list)


class AckResult(Struct):
    id: str
    outcome: Literal["ok", "lease_lost"]
    status: JobStatusName | None

    @classmethod
    def from_domain(cls, result: domain.AckResult) -> AckResult:
        status = result.status.value if result.status is not None else None
        return cls(result.id, result.outcome.value, status)  # type: ignore[arg-type]


class AckResults(Struct):
    results: list[AckResult]


class ReleaseItem(RequestBody):
    id: JobId
    lease_token: LeaseToken


class ReleaseRequest(RequestBody):
    jobs: Annotated[list[ReleaseItem], Meta(min_length=1, max_length=validation.MAX_BATCH)]

    def to_domain(self) -> list[domain.HeldLease]:
        return [domain.HeldLease(item.id, item.lease_token) for item in self.jobs]


class ReleaseResults(Struct):
    results: list[AckResult]
    """In the request's order: `ok` (the job is claimable again, `status` pending or retrying) or `lease_lost`
    (nothing changed; `status` the job's, null if it does not exist)."""
