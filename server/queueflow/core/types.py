"""Domain types, immutable: the store records them, the API renders them.

Most are frozen dataclasses. The three made once per job on every hot path (a batch enqueue builds a `NewJob`
and a `Job` per row, every claim a `Job` per row) are frozen msgspec Structs: constructed in C, a `Job` costs
0.5 µs instead of a frozen dataclass's 5.8 µs (each field set through `object.__setattr__`). Change them with
`msgspec.structs.replace`, not `dataclasses.replace`."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Generic, TypeVar

import msgspec

from queueflow.core.flow import QueueSettings

T = TypeVar("T")

JSON = Any
"""Any value JSON can carry (dict, list, str, int, float, bool, None)."""


class JobStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    RETRYING = "retrying"
    COMPLETED = "completed"
    DEAD_LETTER = "dead_letter"
    CANCELLED = "cancelled"


CLAIMABLE = frozenset({JobStatus.PENDING, JobStatus.RETRYING})
"""Statuses of a job that waits on its queue (claimable once `scheduled_at` has passed)."""
CANCELLABLE = frozenset({JobStatus.PENDING, JobStatus.RETRYING, JobStatus.RUNNING})
RETRIABLE = frozenset({JobStatus.DEAD_LETTER, JobStatus.CANCELLED})
"""Statuses from which a job may be replayed (`POST /v1/jobs/{id}/retry`)."""
FINISHED = frozenset({JobStatus.COMPLETED, JobStatus.DEAD_LETTER, JobStatus.CANCELLED})


class BackoffStrategy(StrEnum):
    EXPONENTIAL = "exponential"
    LINEAR = "linear"
    FIXED = "fixed"


class BackoffPolicy(msgspec.Struct, frozen=True):
    strategy: BackoffStrategy = BackoffStrategy.EXPONENTIAL
    base_seconds: float = 1.0
    max_seconds: float = 3600.0
    jitter: bool = True

    def to_json(self) -> dict[str, JSON]:
        return {
            "strategy": self.strategy.value,
            "base_seconds": self.base_seconds,
            "max_seconds": self.max_seconds,
            "jitter": self.jitter,
        }

    @classmethod
    def from_json(cls, data: dict[str, JSON]) -> BackoffPolicy:
        """The policy of `to_json`'s shape (a stored row's): the shared one, as `backoff_policy` gives it."""
        return backoff_policy(data["strategy"], data["base_seconds"], data["max_seconds"], data["jitter"])


# The one place policies are made from outside values (rows, request bodies). A batch of a thousand jobs, or a
# thousand rows read back, nearly always shares one policy: each distinct one is built once (a policy is immutable,
# so sharing it is safe). Numbers may come as JSON integers from a row.
@functools.lru_cache(maxsize=256)
def backoff_policy(strategy: str, base_seconds: float, max_seconds: float, jitter: bool) -> BackoffPolicy:
    """The `BackoffPolicy` of these settings, shared by everyone who asks for the same ones."""
    return BackoffPolicy(BackoffStrategy(strategy), float(base_seconds), float(max_seconds), bool(jitter))


class OnConflict(StrEnum):
    """What an enqueue with `unique` does when its key already has a job (README.md, "Unique jobs and debounce")."""

    SKIP = "skip"
    REPLACE = "replace"
    ERROR = "error"


class UniqueRule(msgspec.Struct, frozen=True, kw_only=True):
    """At most one job per tenant and `key` in `states`, or per `period_seconds` window of `created_at`.
    Validated by `core.validation.unique_errors`; decided by `core.unique.resolve`."""

    key: str
    states: tuple[JobStatus, ...] | None = None
    """None: the default (`core.validation.DEFAULT_UNIQUE_STATES`), unless `period_seconds` is set."""
    period_seconds: int | None = None
    on_conflict: OnConflict = OnConflict.SKIP
    debounce_seconds: float | None = None
    debounce_max_seconds: float | None = None
    """None: the smaller of 10 × `debounce_seconds` and 86,400 (`core.unique.debounce_cap`)."""


class OnFailure(StrEnum):
    """What a sequence does when one of its jobs ends `dead_letter` (`core.sequences`): the dead job's own setting
    decides."""

    CONTINUE = "continue"
    HALT = "halt"


class SequenceRule(msgspec.Struct, frozen=True, kw_only=True):
    """`sequence` on an enqueue: jobs of one tenant and `key` run one at a time, in id order (`core.sequences`)."""

    key: str
    on_failure: OnFailure = OnFailure.CONTINUE


class UniqueOutcome(StrEnum):
    """What an item of an enqueue with `unique` became (`skipped` and `replaced` are the `QueueFlow-Unique`
    header's values)."""

    CREATED = "created"
    SKIPPED = "skipped"
    REPLACED = "replaced"


class NewJob(msgspec.Struct, frozen=True, kw_only=True):
    """What a caller asks to enqueue. Validated by `core.validation.check_new_job`."""

    task_name: str
    queue_name: str = "default"
    payload: dict[str, JSON] = msgspec.field(default_factory=dict)
    priority: int = 0
    run_at: datetime | None = None
    delay_seconds: float | None = None
    max_retries: int = 3
    backoff: BackoffPolicy = msgspec.field(default_factory=BackoffPolicy)
    timeout_seconds: float | None = None
    metadata: dict[str, JSON] = msgspec.field(default_factory=dict)
    idempotency_key: str | None = None
    trace_context: dict[str, str] | None = None
    """W3C `traceparent` (and `tracestate`) of the request that enqueued it (`core.tracecontext`)."""
    concurrency_key: str | None = None
    """The group a `key_concurrency_limit` counts it in (e.g. a user id); None: not limited by key."""
    unique: UniqueRule | None = None
    """Which other jobs of the tenant keep this one from being created (`core.unique`); None: no rule."""
    expires_at: datetime | None = None
    """Not started by then, never started: dead-lettered instead (`core.deadlines`); not with `expires_in_seconds`."""
    expires_in_seconds: float | None = None
    """`expires_at` as seconds from the enqueue."""
    sequence: SequenceRule | None = None
    """The sequence it runs in, after every earlier job of it (`core.sequences`); None: none."""


class Job(msgspec.Struct, frozen=True, kw_only=True):
    """A job row. `lease_token` is the current owner's proof; it never leaves through a tenant route."""

    id: str
    tenant_id: str
    queue_name: str
    task_name: str
    payload: dict[str, JSON]
    status: JobStatus
    priority: int
    scheduled_at: datetime
    max_retries: int
    backoff: BackoffPolicy
    timeout_seconds: float | None
    metadata: dict[str, JSON]
    created_at: datetime
    idempotency_key: str | None = None
    concurrency_key: str | None = None
    unique_key: str | None = None
    """The key of the `unique` rule it was enqueued with (None if none): a later enqueue's rule finds it by this."""
    expires_at: datetime | None = None
    """Its deadline (None if none): not started by then, it is never started (`core.deadlines`)."""
    sequence_key: str | None = None
    """The sequence it runs in (None if none): not claimable while an earlier job of it holds it (`core.sequences`)."""
    sequence_on_failure: OnFailure | None = None
    """Its sequence's `on_failure` (None without a sequence): `halt` holds the later jobs once this one is dead."""
    sequence_halt: bool = False
    """Dead-lettered, it holds its sequence: `on_failure` is halt and no resume has moved the sequence past it."""
    blocked_by: str | None = None
    """Not a column: the engine's reads fill it in (`core.sequences.blocked_by`), the halted job this one waits
    behind; None when no halt holds it (and in what stores return)."""
    locked_until: datetime | None = None
    lease_token: str | None = None
    delivery_count: int = 0
    retry_count: int = 0
    next_retry_at: datetime | None = None
    result: JSON = None
    error_message: str | None = None
    workflow_id: str | None = None
    workflow_step_id: str | None = None
    started_at: datetime | None = None
    completed_at: datetime | None = None
    progress: JSON = None
    """What the task last reported with a heartbeat (None until it reports); it stays after the job finishes."""
    trace_context: dict[str, str] | None = None
    """W3C trace context of its enqueue (a workflow's, for a step's job): its worker's task span joins that trace."""

    @property
    def deadline(self) -> datetime | None:
        """When the current delivery's timeout expires (`started_at` is the current delivery's claim time)."""
        if self.status is not JobStatus.RUNNING or self.timeout_seconds is None or self.started_at is None:
            return None
        return self.started_at + timedelta(seconds=self.timeout_seconds)


@dataclass(frozen=True, slots=True)
class Enqueued:
    job: Job
    created: bool
    """False when an idempotency key or a `unique` rule resolved to an existing job."""
    unique: UniqueOutcome | None = None
    """`skipped` or `replaced` when a `unique` rule resolved to an existing job; None otherwise."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JobFilter:
    queue_name: str | None = None
    status: JobStatus | None = None
    task_name: str | None = None
    workflow_id: str | None = None
    unique_key: str | None = None
    sequence_key: str | None = None
    metadata: dict[str, JSON] | None = None
    """Jobs whose metadata contains this object (JSONB `@>` semantics)."""


@dataclass(frozen=True, slots=True)
class Cursor:
    """A position in a newest-first listing: rows strictly after (older than) this one."""

    created_at: datetime
    id: str


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimRequest:
    """What one claim asks of the store (`JobStore.job_claim`): up to `max_jobs` due jobs of `queues`, leased for
    `lease_seconds` from `now`. Like River's `JobGetAvailableParams`, one value carries the claim's inputs from the
    engine through the port to every store."""

    queues: Sequence[str]
    max_jobs: int
    now: datetime
    lease_seconds: float
    task_names: Sequence[str] | None = None
    """Only jobs of these tasks (the ones the lessee can run); None: any task."""
    tenant_id: str | None = None
    """Only this tenant's jobs (a tenant-scoped worker key); None: every tenant's, in turns (the store keeps whose
    turn it is, `JobStore.job_claim`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JobQuery:
    """What one listing asks of the store (`JobStore.job_list`): up to `limit` of the tenant's jobs matching `where`,
    strictly after `after`."""

    tenant_id: str
    where: JobFilter = field(default_factory=JobFilter)
    limit: int
    after: Cursor | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueCounts:
    """Counts of one queue's jobs, as the store sees them at `now`; `retrying` is part of `pending` and `scheduled`."""

    name: str
    pending: int = 0
    scheduled: int = 0
    running: int = 0
    retrying: int = 0
    completed: int = 0
    dead_letter: int = 0
    cancelled: int = 0
    oldest_due_at: datetime | None = None
    """`scheduled_at` of the oldest claimable job, if any."""


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueMinute:
    """How many of one queue's jobs finished in one minute (by `completed_at`): completed, or dead-lettered."""

    name: str
    minute: datetime
    """The minute's start (UTC, seconds and below zero)."""
    completed: int = 0
    dead_lettered: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueStats:
    name: str
    pending: int
    scheduled: int
    running: int
    retrying: int
    completed: int
    dead_letter: int
    cancelled: int
    oldest_pending_age_seconds: float | None
    settings: QueueSettings = field(default_factory=QueueSettings)


# The values a worker's lease, ack and heartbeat make per job are frozen Structs, as Job is: a frozen dataclass's
# __init__ sets each field through object.__setattr__, four times the cost, and these are made by the thousand.
class Completion(msgspec.Struct, frozen=True):
    job_id: str
    lease_token: str
    result: JSON = None


class Unchanged:
    """The type of `UNCHANGED`."""

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED = Unchanged()
"""A heartbeat that reports no progress (None would be a progress of JSON null)."""


class HeldLease(msgspec.Struct, frozen=True):
    """A worker's claim to hold a job: the job and the lease token its claim minted (a batched heartbeat's item),
    and the progress it reports, if any."""

    job_id: str
    lease_token: str
    progress: JSON | Unchanged = UNCHANGED


@dataclass(frozen=True, slots=True, kw_only=True)
class Heartbeat:
    """What one heartbeat asks of the store (`JobStore.job_heartbeat`): the lease `lease_token` holds on `job_id`
    extended to `now` + `lease_seconds`, with the progress it reports, if any."""

    job_id: str
    lease_token: str
    lease_seconds: float
    progress: JSON | Unchanged = UNCHANGED
    now: datetime


class Ended(msgspec.Struct, frozen=True):
    """What a worker's batched completion needs back of a job it ended (the whole row costs more to read)."""

    id: str
    status: JobStatus
    queue_name: str
    workflow_id: str | None
    workflow_step_id: str | None
    """With `workflow_id`, the step the job ran: a completed step is advanced from this and the completion's
    result, without reading its row back."""


class FailureRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A worker's report that a delivery failed; the engine turns it into a `Failure`."""

    job_id: str
    lease_token: str
    error: str
    retryable: bool = True
    retry_after_seconds: float | None = None


class Failure(msgspec.Struct, frozen=True):
    """A decided failure, for the store to record: `retry_at` set → retrying, None → dead_letter."""

    job_id: str
    lease_token: str
    error: str
    retry_at: datetime | None


class AckOutcome(StrEnum):
    OK = "ok"
    LEASE_LOST = "lease_lost"


class AckResult(msgspec.Struct, frozen=True):
    id: str
    outcome: AckOutcome
    status: JobStatus | None
    queue_name: str | None = None
    """The job's queue (None when the job does not exist), so callers can account per queue."""


class HeartbeatResult(msgspec.Struct, frozen=True):
    id: str
    locked_until: datetime | None
    """The lease's new end; None when the token no longer held the job (`lease_lost`)."""

    @property
    def outcome(self) -> AckOutcome:
        return AckOutcome.OK if self.locked_until is not None else AckOutcome.LEASE_LOST


@dataclass(frozen=True, slots=True)
class MaintenanceReport:
    reclaimed: int = 0
    retried: int = 0
    dead_lettered: int = 0
    deleted: int = 0
    healed: int = 0
    """Lost workflow advancements replayed: step jobs that had finished while their step stayed `enqueued`."""
    deleted_events: int = 0
    """Events kept past their day (`core.events.EVENT_RETENTION`), deleted."""
