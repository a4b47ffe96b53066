"""The wire shapes of the API (spec/openapi.json): msgspec Structs, apart from the domain types they convert to.

The `Meta` constraints mirror the rules in `core.validation` (from the same constants) so the spec documents
them; the engine still checks every rule, so an embedder who bypasses HTTP gets the same answers.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from litestar.params import PathParameter
from msgspec import UNSET, Meta, Struct, UnsetType

from queueflow.core import flow, validation, workflow
from queueflow.core import schedule as schedules
from queueflow.core import types as domain
from queueflow.core.backoff import policy

NO_NUL = r"^[^\x00]*$"
"""PostgreSQL text cannot hold NUL; saying so in the spec keeps generated clients and fuzzers honest."""

QueueName = Annotated[str, Meta(pattern=validation.NAME_PATTERN.pattern, min_length=1, max_length=100)]
QUEUE_NAME_SCHEMA = {"type": "string", "pattern": validation.NAME_PATTERN.pattern, "minLength": 1, "maxLength": 100}
TaskName = Annotated[str, Meta(min_length=1, max_length=200, pattern=NO_NUL)]
TASK_NAME_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 200, "pattern": NO_NUL}
LeaseToken = Annotated[str, Meta(min_length=1, max_length=255, pattern=NO_NUL)]
IdempotencyKey = Annotated[str, Meta(min_length=1, max_length=255, pattern=NO_NUL)]
ErrorText = Annotated[str, Meta(max_length=65_536, pattern=NO_NUL)]
Priority = Annotated[int, Meta(ge=-1000, le=1000)]
MaxRetries = Annotated[int, Meta(ge=0, le=100)]
DelaySeconds = Annotated[
    float,
    # Litestar drops a falsy bound (ge=0) from an optional field's schema; `extra` puts it back.
    Meta(ge=0, le=validation.MAX_DELAY_SECONDS, extra_json_schema={"extra": {"minimum": 0}}),
]
TimeoutSeconds = Annotated[float, Meta(ge=1, le=validation.MAX_TIMEOUT_SECONDS)]
LeaseSeconds = Annotated[float, Meta(ge=1, le=validation.MAX_LEASE_SECONDS)]
AwareDateTime = Annotated[datetime, Meta(tz=True)]
JSONObject = dict[str, Any]
JobStatusName = Literal["pending", "running", "retrying", "completed", "dead_letter", "cancelled"]

ID_PATTERN = r"^[A-Za-z0-9_]{1,64}$"
"""Ids are `job_` + 26 base32 characters; anything far from that shape is not one of ours."""
JobId = Annotated[str, Meta(pattern=ID_PATTERN, min_length=1, max_length=64)]
JobIdPath = Annotated[str, PathParameter(pattern=ID_PATTERN, min_length=1, max_length=64)]


class _Request(Struct, forbid_unknown_fields=True, kw_only=True):
    """Request bodies reject unknown fields, so a typo is a 400 rather than a silently ignored option."""


# ---- jobs ------------------------------------------------------------------------------------------


class Backoff(_Request):
    """How long a failed job waits before its next delivery; a partial object is merged with the defaults."""

    strategy: Literal["exponential", "linear", "fixed"] = "exponential"
    base_seconds: Annotated[float, Meta(ge=0.001, le=86_400)] = 1.0
    max_seconds: Annotated[float, Meta(ge=0.001, le=validation.MAX_TIMEOUT_SECONDS)] = 3600.0
    jitter: bool = True

    def to_domain(self) -> domain.BackoffPolicy:
        return policy(self.strategy, self.base_seconds, self.max_seconds, self.jitter)

    @classmethod
    def from_domain(cls, policy: domain.BackoffPolicy) -> Backoff:
        return _backoff(policy)


# Each distinct policy's wire form is built once (see `core.backoff.policy` for the other direction).
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


class _Task(_Request):
    """What a job runs and how it is delivered: the fields a job and a workflow step share."""

    task_name: TaskName
    queue_name: QueueName = "default"
    payload: JSONObject = msgspec.field(default_factory=dict)
    priority: Priority = 0
    max_retries: MaxRetries = 3
    backoff: Backoff = msgspec.field(default_factory=Backoff)
    timeout_seconds: TimeoutSeconds | None = None
    concurrency_key: ConcurrencyKey | None = None


class EnqueueJob(_Task):
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


class BatchItem(EnqueueJob):
    idempotency_key: IdempotencyKey | None = None


class EnqueueBatch(_Request):
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
    created_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    progress: Any
    """What the task last reported with a heartbeat (null until it reports); kept after the job finishes."""
    trace_context: TraceContext | None
    """W3C trace context of its enqueue (a workflow's, for a step's job), for its worker's task span."""

    @classmethod
    def from_domain(cls, job: domain.Job) -> Job:
        return cls(**_job_fields(job))


class LeasedJob(Job, kw_only=True):
    """A job as its worker sees it: with the lease token that proves ownership and the delivery's deadline."""

    lease_token: str
    deadline: datetime | None

    @classmethod
    def from_domain(cls, job: domain.Job) -> LeasedJob:
        return cls(**_job_fields(job), lease_token=job.lease_token or "", deadline=job.deadline)


def _job_fields(job: domain.Job) -> dict[str, Any]:
    return {
        "id": job.id,
        "tenant_id": job.tenant_id,
        "queue_name": job.queue_name,
        "task_name": job.task_name,
        "payload": job.payload,
        "status": job.status.value,
        "priority": job.priority,
        "scheduled_at": job.scheduled_at,
        "locked_until": job.locked_until,
        "delivery_count": job.delivery_count,
        "retry_count": job.retry_count,
        "max_retries": job.max_retries,
        "backoff": Backoff.from_domain(job.backoff),
        "timeout_seconds": job.timeout_seconds,
        "next_retry_at": job.next_retry_at,
        "result": job.result,
        "error_message": job.error_message,
        "workflow_id": job.workflow_id,
        "workflow_step_id": job.workflow_step_id,
        "metadata": job.metadata,
        "idempotency_key": job.idempotency_key,
        "concurrency_key": job.concurrency_key,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "completed_at": job.completed_at,
        "progress": job.progress,
        "trace_context": _trace_context(job.trace_context),
    }


def _trace_context(context: dict[str, str] | None) -> TraceContext | None:
    if context is None:
        return None
    return TraceContext(traceparent=context["traceparent"], tracestate=context.get("tracestate"))


class JobBatch(Struct):
    jobs: list[Job]


class JobPage(Struct):
    items: list[Job]
    next_cursor: str | None


Limit = Annotated[int, Meta(ge=1, le=flow.MAX_LIMIT)]


class RateLimit(_Request):
    """At most `jobs` leases per `per_seconds`, across all workers: a token bucket (burst `jobs`, refilled
    continuously)."""

    jobs: Annotated[int, Meta(ge=1, le=flow.MAX_RATE_JOBS)]
    per_seconds: Annotated[float, Meta(ge=flow.MIN_RATE_SECONDS, le=flow.MAX_RATE_SECONDS)]


class Queue(Struct, kw_only=True):
    """A queue's job counts (disjoint by state) and the tenant's flow-control settings for it."""

    name: str
    pending: int
    scheduled: int
    running: int
    retrying: int
    completed: int
    dead_letter: int
    cancelled: int
    oldest_pending_age_seconds: float | None
    paused: bool
    concurrency_limit: int | None
    key_concurrency_limit: int | None
    rate_limit: RateLimit | None

    @classmethod
    def from_domain(cls, stats: domain.QueueStats) -> Queue:
        settings = stats.settings
        rate = settings.rate_limit
        return cls(
            name=stats.name,
            pending=stats.pending,
            scheduled=stats.scheduled,
            running=stats.running,
            retrying=stats.retrying,
            completed=stats.completed,
            dead_letter=stats.dead_letter,
            cancelled=stats.cancelled,
            oldest_pending_age_seconds=stats.oldest_pending_age_seconds,
            paused=settings.paused,
            concurrency_limit=settings.concurrency_limit,
            key_concurrency_limit=settings.key_concurrency_limit,
            rate_limit=RateLimit(jobs=rate.jobs, per_seconds=rate.per_seconds) if rate is not None else None,
        )


class QueueList(Struct):
    queues: list[Queue]


class UpdateQueue(_Request):
    """A PATCH of a queue's settings: an absent field stays as it is; `null` removes a limit."""

    paused: bool | UnsetType = UNSET
    concurrency_limit: Limit | UnsetType | None = UNSET
    key_concurrency_limit: Limit | UnsetType | None = UNSET
    rate_limit: RateLimit | UnsetType | None = UNSET

    def to_domain(self) -> flow.QueueSettingsPatch:
        rate = self.rate_limit
        return flow.QueueSettingsPatch(
            paused=flow.KEEP if self.paused is UNSET else self.paused,
            concurrency_limit=flow.KEEP if self.concurrency_limit is UNSET else self.concurrency_limit,
            key_concurrency_limit=flow.KEEP if self.key_concurrency_limit is UNSET else self.key_concurrency_limit,
            rate_limit=(
                flow.KEEP
                if rate is UNSET
                else flow.RateLimit(rate.jobs, rate.per_seconds)
                if rate is not None
                else None
            ),
        )


QueueNamePath = Annotated[str, PathParameter(pattern=validation.NAME_PATTERN.pattern, min_length=1, max_length=100)]


# ---- workflows -------------------------------------------------------------------------------------


StepName = QueueName  # one naming rule (`validation.NAME_PATTERN`) for queues, steps and schedules
OnFailureName = Literal["halt", "skip", "continue"]
StepStatusName = Literal["pending", "enqueued", "completed", "failed", "skipped", "cancelled"]
WorkflowStatusName = Literal["running", "completed", "failed", "partially_failed", "cancelled"]


class NewWorkflowStep(_Task, kw_only=True):
    name: StepName
    depends_on: Annotated[
        list[StepName],
        Meta(
            max_length=workflow.MAX_STEPS,
            # As for `queues`: Litestar documents no constraint of a list's items (step names follow the same rule).
            extra_json_schema={"extra": {"items": QUEUE_NAME_SCHEMA}},
        ),
    ] = msgspec.field(default_factory=list)
    on_failure: OnFailureName = "halt"

    def to_domain(self) -> workflow.NewStep:
        return workflow.NewStep(
            name=self.name,
            task_name=self.task_name,
            payload=self.payload,
            depends_on=self.depends_on,
            on_failure=workflow.OnFailure(self.on_failure),
            queue_name=self.queue_name,
            priority=self.priority,
            max_retries=self.max_retries,
            backoff=self.backoff.to_domain(),
            timeout_seconds=self.timeout_seconds,
            concurrency_key=self.concurrency_key,
        )


class CreateWorkflow(_Request, kw_only=True):
    """A DAG of named steps; it must have unique names, resolvable `depends_on` and no cycle (else 400)."""

    name: Annotated[str, Meta(min_length=1, max_length=200, pattern=NO_NUL)]
    context: JSONObject = msgspec.field(default_factory=dict)
    steps: Annotated[list[NewWorkflowStep], Meta(min_length=1, max_length=workflow.MAX_STEPS)]

    def to_domain(self, idempotency_key: str | None) -> workflow.NewWorkflow:
        return workflow.NewWorkflow(
            name=self.name,
            steps=[step.to_domain() for step in self.steps],
            context=self.context,
            idempotency_key=idempotency_key,
        )


class WorkflowStep(Struct, kw_only=True):
    name: str
    task_name: str
    status: StepStatusName
    job_id: str | None
    depends_on: list[str]
    on_failure: OnFailureName


class Workflow(Struct, kw_only=True):
    """A workflow and its steps, in the order they were submitted; `context` holds each completed step's result."""

    id: str
    tenant_id: str
    name: str
    status: WorkflowStatusName
    context: JSONObject
    steps: list[WorkflowStep]
    created_at: datetime
    completed_at: datetime | None

    @classmethod
    def from_domain(cls, run: workflow.Workflow) -> Workflow:
        steps = [
            WorkflowStep(
                name=step.name,
                task_name=step.task_name,
                status=step.status.value,
                job_id=step.job_id,
                depends_on=step.depends_on,
                on_failure=step.on_failure.value,
            )
            for step in run.steps
        ]
        return cls(
            id=run.id,
            tenant_id=run.tenant_id,
            name=run.name,
            status=run.status.value,
            context=run.context,
            steps=steps,
            created_at=run.created_at,
            completed_at=run.completed_at,
        )


class WorkflowPage(Struct):
    items: list[Workflow]
    next_cursor: str | None


# ---- worker ----------------------------------------------------------------------------------------


class LeaseRequest(_Request):
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


class LeasedJobs(Struct):
    jobs: list[LeasedJob]


class HeartbeatRequest(_Request):
    lease_token: LeaseToken
    lease_seconds: LeaseSeconds = 30.0
    progress: Any | UnsetType = msgspec.field(default=UNSET)
    """Any JSON value (at most 64 KiB encoded): replaces the job's progress. Absent: the progress stays as it is."""


class Heartbeat(Struct):
    locked_until: datetime


class HeartbeatItem(_Request):
    id: JobId
    lease_token: LeaseToken
    progress: Any | UnsetType = msgspec.field(default=UNSET)
    """Any JSON value (at most 64 KiB encoded): replaces the job's progress. Absent: the progress stays as it is."""


class HeartbeatBatch(_Request):
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


class CompleteRequest(_Request):
    lease_token: LeaseToken
    result: Any = None


class FailRequest(_Request):
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


class AckRequest(_Request):
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


# ---- schedules -------------------------------------------------------------------------------------

ScheduleName = Annotated[str, Meta(pattern=validation.NAME_PATTERN.pattern, min_length=1, max_length=100)]
ScheduleNamePath = Annotated[str, PathParameter(pattern=validation.NAME_PATTERN.pattern, min_length=1, max_length=100)]
# Cron and time-zone validity are checked by `core.schedule` (its messages say what is wrong); the spec can
# only bound their length and give examples.
Cron = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=schedules.MAX_CRON_LENGTH,
        pattern=NO_NUL,
        description="Five fields (minute hour day-of-month month day-of-week) or an alias such as @daily",
        examples=["0 3 * * *", "*/15 * * * MON-FRI", "@hourly"],
    ),
]
TimeZone = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=255,
        pattern=NO_NUL,
        description="An IANA time zone name; occurrences follow it across DST changes",
        examples=["UTC", "Europe/Berlin"],
    ),
]


class CreateSchedule(_Request):
    name: ScheduleName
    cron: Cron
    task_name: TaskName
    timezone: TimeZone = "UTC"
    queue_name: QueueName = "default"
    payload: JSONObject = msgspec.field(default_factory=dict)
    priority: Priority = 0
    max_retries: MaxRetries = 3
    enabled: bool = True

    def to_domain(self) -> schedules.NewSchedule:
        return schedules.NewSchedule(**{name: getattr(self, name) for name in self.__struct_fields__})


class UpdateSchedule(_Request):
    """A PATCH: an absent field stays as it is; `null` is not a value any of them can take."""

    cron: Cron | UnsetType = UNSET
    timezone: TimeZone | UnsetType = UNSET
    task_name: TaskName | UnsetType = UNSET
    queue_name: QueueName | UnsetType = UNSET
    payload: JSONObject | UnsetType = UNSET
    priority: Priority | UnsetType = UNSET
    max_retries: MaxRetries | UnsetType = UNSET
    enabled: bool | UnsetType = UNSET

    def to_domain(self) -> schedules.SchedulePatch:
        # The domain patch spells "unchanged" as None, which no wire value can be.
        fields = {name: getattr(self, name) for name in self.__struct_fields__}
        return schedules.SchedulePatch(**{name: value for name, value in fields.items() if value is not UNSET})


class Schedule(Struct, kw_only=True):
    """A cron schedule. `next_run_at` is its pending occurrence (null while disabled)."""

    id: str
    tenant_id: str
    name: str
    cron: str
    timezone: str
    task_name: str
    queue_name: str
    payload: JSONObject
    priority: int
    max_retries: int
    enabled: bool
    next_run_at: datetime | None
    last_run_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_domain(cls, schedule: schedules.Schedule) -> Schedule:
        return cls(**{name: getattr(schedule, name) for name in cls.__struct_fields__})


class SchedulePage(Struct):
    items: list[Schedule]
    next_cursor: str | None


# ---- operations ------------------------------------------------------------------------------------


class Health(Struct):
    status: Literal["ok", "unavailable"]
