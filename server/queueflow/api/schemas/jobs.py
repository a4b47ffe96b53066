"""The wire shapes of jobs: enqueueing one or a batch, and a job as a tenant sees it."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct

from queueflow.api.schemas.common import (
    NO_NUL,
    AwareDateTime,
    DelaySeconds,
    IdempotencyKey,
    JobStatusName,
    JSONObject,
    MaxRetries,
    Priority,
    QueueName,
    RequestBody,
    TaskName,
    TimeoutSeconds,
)
from queueflow.core import types as domain
from queueflow.core import validation


class Backoff(RequestBody):
    """How long a failed job waits before its next delivery; a partial object is merged with the defaults."""

    strategy: Literal["exponential", "linear", "fixed"] = "exponential"
    base_seconds: Annotated[float, Meta(ge=0.001, le=86_400)] = 1.0
    max_seconds: Annotated[float, Meta(ge=0.001, le=validation.MAX_TIMEOUT_SECONDS)] = 3600.0
    jitter: bool = True

    def to_domain(self) -> domain.BackoffPolicy:
        return domain.backoff_policy(self.strategy, self.base_seconds, self.max_seconds, self.jitter)

    @classmethod
    def from_domain(cls, policy: domain.BackoffPolicy) -> Backoff:
        return _backoff(policy)


# Each distinct policy's wire form is built once, from the shared policy (`core.types.backoff_policy`, the other
# direction): a lease of a thousand jobs renders one policy a thousand times.
@functools.lru_cache(maxsize=256)
def _backoff(policy: domain.BackoffPolicy) -> Backoff:
    return Backoff(
        strategy=policy.strategy.value,
        base_seconds=policy.base_seconds,
        max_seconds=policy.max_seconds,
        jitter=policy.jitter,
    )


ConcurrencyKey = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=200,
        pattern=NO_NUL,
        description="The group a queue's key_concurrency_limit counts this job in, e.g. a user id",
    ),
]


class TaskFields(RequestBody):
    """What a job runs and how it is delivered: the fields a job and a workflow step share."""

    task_name: TaskName
    queue_name: QueueName = "default"
    payload: JSONObject = msgspec.field(default_factory=dict)
    priority: Priority = 0
    max_retries: MaxRetries = 3
    backoff: Backoff = msgspec.field(default_factory=Backoff)
    timeout_seconds: TimeoutSeconds | None = None
    concurrency_key: ConcurrencyKey | None = None


# By value, looked up: calling the enum costs ten times as much, on every item of a batch.
_ON_CONFLICT = {choice.value: choice for choice in domain.OnConflict}


class Unique(RequestBody):
    """At most one job per tenant and `key` in `states` (or per `period_seconds` window of `created_at`); what an
    enqueue that meets it does is `on_conflict`. With `debounce_seconds` the job runs that long after the last
    enqueue of its key, never later than `debounce_max_seconds` after its creation."""

    key: Annotated[str, Meta(min_length=1, max_length=255, pattern=NO_NUL)]
    states: Annotated[list[JobStatusName], Meta(min_length=1, max_length=6)] | None = None
    """Default ["pending", "retrying", "running"]; not with `period_seconds`."""
    period_seconds: Annotated[int, Meta(ge=1, le=validation.MAX_PERIOD_SECONDS)] | None = None
    on_conflict: Literal["skip", "replace", "error"] = "skip"
    debounce_seconds: Annotated[float, Meta(ge=0.001, le=validation.MAX_DEBOUNCE_SECONDS)] | None = None
    """Only with on_conflict "replace" and the default states; not with run_at or delay_seconds."""
    debounce_max_seconds: Annotated[float, Meta(ge=0.001, le=validation.MAX_DEBOUNCE_SECONDS)] | None = None
    """At least debounce_seconds; default the smaller of 10 × debounce_seconds and 86,400."""

    def to_domain(self) -> domain.UniqueRule:
        return domain.UniqueRule(
            key=self.key,
            states=None if self.states is None else tuple(domain.JobStatus(state) for state in self.states),
            period_seconds=self.period_seconds,
            on_conflict=_ON_CONFLICT[self.on_conflict],
            debounce_seconds=self.debounce_seconds,
            debounce_max_seconds=self.debounce_max_seconds,
        )


class Sequence(RequestBody):
    """Jobs of one tenant with the same `key` run one at a time, in the order they were enqueued, across every queue
    and worker. `on_failure`: when this job ends dead_letter, "continue" lets the next one run; "halt" holds every
    later one (pending, with `blocked_by`) until it is replayed or the sequence is resumed."""

    key: Annotated[str, Meta(min_length=1, max_length=255, pattern=NO_NUL)]
    on_failure: Literal["continue", "halt"] = "continue"

    def to_domain(self) -> domain.SequenceRule:
        return domain.SequenceRule(key=self.key, on_failure=domain.OnFailure(self.on_failure))


class JobFields(TaskFields):
    """A job as it is enqueued, but for a `unique` rule and a deadline: what a trigger's `task` takes (core.triggers
    refuses both: an event's jobs are enqueued without the engine's checks of either)."""

    run_at: AwareDateTime | None = None
    delay_seconds: DelaySeconds | None = None
    metadata: JSONObject = msgspec.field(default_factory=dict)

    def to_domain(self, idempotency_key: str | None) -> domain.NewJob:
        return domain.NewJob(
            task_name=self.task_name,
            queue_name=self.queue_name,
            payload=self.payload,
            priority=self.priority,
            run_at=self.run_at,
            delay_seconds=self.delay_seconds,
            max_retries=self.max_retries,
            backoff=self.backoff.to_domain(),
            timeout_seconds=self.timeout_seconds,
            metadata=self.metadata,
            idempotency_key=idempotency_key,
            concurrency_key=self.concurrency_key,
        )


class EnqueueJob(JobFields):
    unique: Unique | None = None
    expires_at: AwareDateTime | None = None
    """Not started by then, the job is never started: it becomes dead_letter ("expired: not started by …"). Later
    than its scheduled_at; not with expires_in_seconds."""
    expires_in_seconds: Annotated[float, Meta(ge=0.001, le=validation.MAX_DELAY_SECONDS)] | None = None
    """expires_at as seconds from now."""
    sequence: Sequence | None = None

    def to_domain(self, idempotency_key: str | None) -> domain.NewJob:
        return msgspec.structs.replace(
            super().to_domain(idempotency_key),
            unique=None if self.unique is None else self.unique.to_domain(),
            expires_at=self.expires_at,
            expires_in_seconds=self.expires_in_seconds,
            sequence=None if self.sequence is None else self.sequence.to_domain(),
        )


class BatchItem(EnqueueJob):
    idempotency_key: IdempotencyKey | None = None


class EnqueueBatch(RequestBody):
    jobs: Annotated[list[BatchItem], Meta(min_length=1, max_length=validation.MAX_BATCH)]


class TraceContext(Struct, kw_only=True):
    """W3C Trace Context (https://www.w3.org/TR/trace-context/) of a job's enqueue."""

    traceparent: str
    tracestate: str | None


class Job(Struct, kw_only=True):
    """A job as a tenant sees it (never its lease token)."""

    id: str
    tenant_id: str
    queue_name: str
    task_name: str
    payload: JSONObject
    status: JobStatusName
    priority: int
    scheduled_at: datetime
    locked_until: datetime | None
    delivery_count: int
    retry_count: int
    max_retries: int
    backoff: Backoff
    timeout_seconds: float | None
    next_retry_at: datetime | None
    result: Any
    error_message: str | None
    workflow_id: str | None
    workflow_step_id: str | None
    metadata: JSONObject
    idempotency_key: str | None
    concurrency_key: str | None
    unique_key: str | None = None
    """The key of the `unique` rule it was enqueued with, if any."""
    expires_at: datetime | None = None
    """Its deadline, if any: not started by then, it is never started. A replay clears it."""
    sequence_key: str | None = None
    """The sequence it runs in, if any: one job of a sequence at a time, in the order they were enqueued."""
    blocked_by: str | None = None
    """While a halted sequence holds it: the dead-lettered job it waits behind (replay it, or resume the sequence)."""
    created_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    progress: Any
    """What the task last reported with a heartbeat (null until it reports); kept after the job finishes."""
    trace_context: TraceContext | None
    """W3C trace context of its enqueue (a workflow's, for a step's job), for its worker's task span."""

    @classmethod
    def from_domain(cls, job: domain.Job) -> Job:
        return cls(**job_fields(job))


def job_fields(job: domain.Job) -> dict[str, Any]:
    """A `Job`'s fields from the domain job (a `LeasedJob` adds its lease to them)."""
    return {
        "id": job.id,
        "tenant_id": job.tenant_id,
        "queue_name": job.queue_name,
        "task_name": job.task_name,
        "payload": job.payload,
        "status": job.status._value_,  # the member's own attribute: `.value` is a property, a Python call per job
        "priority": job.priority,
        "scheduled_at": job.scheduled_at,
        "locked_until": job.locked_until,
        "delivery_count": job.delivery_count,
        "retry_count": job.retry_count,
        "max_retries": job.max_retries,
        "backoff": _backoff(job.backoff),
        "timeout_seconds": job.timeout_seconds,
        "next_retry_at": job.next_retry_at,
        "result": job.result,
        "error_message": job.error_message,
        "workflow_id": job.workflow_id,
        "workflow_step_id": job.workflow_step_id,
        "metadata": job.metadata,
        "idempotency_key": job.idempotency_key,
        "concurrency_key": job.concurrency_key,
        "unique_key": job.unique_key,
        "expires_at": job.expires_at,
        "sequence_key": job.sequence_key,
        "blocked_by": job.blocked_by,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "completed_at": job.completed_at,
        "progress": job.progress,
        "trace_context": None if job.trace_context is None else _trace_context(job.trace_context),
    }


def _trace_context(context: dict[str, str]) -> TraceContext:
    return TraceContext(traceparent=context["traceparent"], tracestate=context.get("tracestate"))


class JobBatch(Struct):
    jobs: list[Job]


class JobPage(Struct):
    items: list[Job]
    next_cursor: str | None
