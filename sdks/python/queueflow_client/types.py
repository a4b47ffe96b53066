"""The objects the client returns: plain frozen dataclasses, decoded from the API's JSON.

They mirror the spec's schemas field for field (tests/sdk/test_types_match_spec.py fails when they drift);
datetimes are aware (UTC). Fields a newer server adds are ignored.
"""

from __future__ import annotations

import enum
from collections import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

import msgspec

T = TypeVar("T")

JobStatus = Literal["pending", "running", "retrying", "completed", "dead_letter", "cancelled"]
WorkflowStatus = Literal["running", "completed", "failed", "partially_failed", "cancelled"]
StepStatus = Literal["pending", "enqueued", "waiting", "completed", "failed", "skipped", "cancelled"]
OnFailure = Literal["halt", "skip", "continue"]
BackoffStrategy = Literal["exponential", "linear", "fixed"]
# A field of one of these types is annotated `... | str`: a server newer than the SDK may answer a value the SDK
# does not know yet (a new status), which the field then holds as the string it is, never an error
# (docs/compatibility.md). Compare with the values you know; treat any other as "something newer".


def _time(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value)


def _seconds(value: Any) -> float | None:
    """A number of seconds as the float it is declared (JSON may spell 30.0 as 30)."""
    return None if value is None else float(value)


def _required_time(value: Any) -> datetime:
    when = _time(value)
    if when is None:
        raise ValueError("a required time is missing")
    return when


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long a failed job waits before its next delivery (the `Backoff` schema of spec/openapi.json)."""

    strategy: BackoffStrategy | str = "exponential"
    base_seconds: float = 1.0
    max_seconds: float = 3600.0
    jitter: bool = True

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Backoff:
        return cls(data["strategy"], float(data["base_seconds"]), float(data["max_seconds"]), bool(data["jitter"]))

    def to_json(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "base_seconds": self.base_seconds,
            "max_seconds": self.max_seconds,
            "jitter": self.jitter,
        }


OnConflict = Literal["skip", "replace", "error"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Unique:
    """At most one job per tenant and `key` in `states` (default pending, retrying, running), or per
    `period_seconds` window of its creation time; `on_conflict` says what an enqueue that meets one does: `skip`
    (answer with it), `replace` (rewrite it if it has not started) or `error` (`DuplicateError`). With
    `debounce_seconds` (and `on_conflict="replace"`) the job runs that long after the last enqueue of its key,
    but never later than `debounce_max_seconds` after it was created (the `Unique` schema of spec/openapi.json)."""

    key: str
    states: abc.Sequence[JobStatus] | None = None
    period_seconds: int | None = None
    on_conflict: OnConflict = "skip"
    debounce_seconds: float | None = None
    debounce_max_seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"key": self.key, "on_conflict": self.on_conflict}
        if self.states is not None:
            body["states"] = list(self.states)
        for name in ("period_seconds", "debounce_seconds", "debounce_max_seconds"):
            if getattr(self, name) is not None:
                body[name] = getattr(self, name)
        return body


SequenceOnFailure = Literal["continue", "halt"]


@dataclass(frozen=True, slots=True)
class Sequence:
    """Jobs of one tenant with the same `key` run one at a time, in the order they were enqueued, across every queue
    and worker. `on_failure`: when this job ends dead_letter, "continue" lets the next one run; "halt" holds every
    later one (their `blocked_by` names this job) until it is replayed or `sequences.resume(key)` is called (the
    `Sequence` schema of spec/openapi.json)."""

    key: str
    on_failure: SequenceOnFailure = "continue"

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "on_failure": self.on_failure}


@dataclass(frozen=True, slots=True)
class SequenceResumed:
    """A sequence after `sequences.resume`: nothing blocks it any more."""

    key: str
    blocked_by: None = None


@dataclass(frozen=True, slots=True)
class TraceContext:
    """W3C Trace Context (https://www.w3.org/TR/trace-context/) of a job's enqueue."""

    traceparent: str
    tracestate: str | None = None

    def headers(self) -> dict[str, str]:
        """As HTTP headers (an OpenTelemetry propagator's carrier)."""
        return {"traceparent": self.traceparent, **({"tracestate": self.tracestate} if self.tracestate else {})}


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    id: str
    tenant_id: str
    queue_name: str
    task_name: str
    payload: dict[str, Any]
    status: JobStatus | str
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
    metadata: dict[str, Any]
    idempotency_key: str | None
    concurrency_key: str | None
    created_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    progress: Any = None
    """What the task last reported with `ctx.progress(...)` (None until it reports)."""
    trace_context: TraceContext | None = None
    """W3C trace context of the job's enqueue: the Worker's task span continues that trace."""
    unique_key: str | None = None
    """The key of the `unique` rule it was enqueued with (None if none)."""
    expires_at: datetime | None = None
    """Its deadline (None if none): not started by then, it is never started."""
    sequence_key: str | None = None
    """The sequence it runs in (None if none)."""
    blocked_by: str | None = None
    """While a halted sequence holds it: the dead-lettered job it waits behind."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Job:
        return cls(**_job_fields(data))


@dataclass(frozen=True, slots=True, kw_only=True)
class LeasedJob(Job):
    """A job as its worker holds it: with the token that proves the lease, and the delivery's deadline."""

    lease_token: str
    deadline: datetime | None
    claimed_after_seconds: float = 0.0
    """How long after the lease request arrived the server claimed the job (0 unless the request waited for work):
    its lease and deadline began at least this long after the request was sent."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LeasedJob:
        return cls(
            **_job_fields(data),
            lease_token=data["lease_token"],
            deadline=_time(data.get("deadline")),
            claimed_after_seconds=data.get("claimed_after_seconds", 0.0),
        )


@dataclass(frozen=True, slots=True)
class _LeaseAnswer:
    jobs: list[LeasedJob]


# A lease answer decoded straight into `LeasedJob`s by msgspec, in C: 4–5 µs a job, where `json.loads` and
# `LeasedJob.from_json` took 25 — a quarter of a busy SDK worker's CPU. It ignores fields a newer server adds, as
# `from_json` does; tests/sdk/test_lease_decoding.py holds the two to the same jobs.
_LEASE_ANSWER = msgspec.json.Decoder(_LeaseAnswer)


def decode_lease_answer(content: bytes) -> list[LeasedJob]:
    """The jobs of a `POST /v1/worker/lease` answer's body."""
    return _LEASE_ANSWER.decode(content).jobs


def _trace_context(data: Mapping[str, Any] | None) -> TraceContext | None:
    return None if data is None else TraceContext(data["traceparent"], data.get("tracestate"))


def _job_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": data["id"],
        "tenant_id": data["tenant_id"],
        "queue_name": data["queue_name"],
        "task_name": data["task_name"],
        "payload": dict(data["payload"]),
        "status": data["status"],
        "priority": data["priority"],
        "scheduled_at": _required_time(data["scheduled_at"]),
        "locked_until": _time(data.get("locked_until")),
        "delivery_count": data["delivery_count"],
        "retry_count": data["retry_count"],
        "max_retries": data["max_retries"],
        "backoff": Backoff.from_json(data["backoff"]),
        "timeout_seconds": _seconds(data.get("timeout_seconds")),
        "next_retry_at": _time(data.get("next_retry_at")),
        "result": data.get("result"),
        "progress": data.get("progress"),
        "trace_context": _trace_context(data.get("trace_context")),
        "error_message": data.get("error_message"),
        "workflow_id": data.get("workflow_id"),
        "workflow_step_id": data.get("workflow_step_id"),
        "metadata": dict(data.get("metadata") or {}),
        "idempotency_key": data.get("idempotency_key"),
        "concurrency_key": data.get("concurrency_key"),
        "unique_key": data.get("unique_key"),
        "expires_at": _time(data.get("expires_at")),
        "sequence_key": data.get("sequence_key"),
        "blocked_by": data.get("blocked_by"),
        "created_at": _required_time(data["created_at"]),
        "started_at": _time(data.get("started_at")),
        "completed_at": _time(data.get("completed_at")),
    }


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most `jobs` leases per `per_seconds`, across all workers (a token bucket: burst `jobs`)."""

    jobs: int
    per_seconds: float

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RateLimit:
        return cls(jobs=data["jobs"], per_seconds=data["per_seconds"])


@dataclass(frozen=True, slots=True, kw_only=True)
class Queue:
    """One queue's counts (disjoint by state: `GET /v1/queues` in spec/openapi.json) and the tenant's settings for
    it: flow control (README.md, "Flow control"; None is "no limit") and retention (README.md, "Retention"; None:
    the server's `--retention-hours`, or keep)."""

    name: str
    pending: int
    scheduled: int
    running: int
    retrying: int
    completed: int
    dead_letter: int
    cancelled: int
    oldest_pending_age_seconds: float | None
    paused: bool = False
    concurrency_limit: int | None = None
    key_concurrency_limit: int | None = None
    rate_limit: RateLimit | None = None
    retention_seconds: int | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Queue:
        rate = data.get("rate_limit")
        return cls(
            name=data["name"],
            pending=data["pending"],
            scheduled=data["scheduled"],
            running=data["running"],
            retrying=data["retrying"],
            completed=data["completed"],
            dead_letter=data["dead_letter"],
            cancelled=data["cancelled"],
            oldest_pending_age_seconds=data.get("oldest_pending_age_seconds"),
            paused=data.get("paused", False),
            concurrency_limit=data.get("concurrency_limit"),
            key_concurrency_limit=data.get("key_concurrency_limit"),
            rate_limit=RateLimit.from_json(rate) if rate is not None else None,
            retention_seconds=data.get("retention_seconds"),
        )


class Unchanged(enum.Enum):
    """The default of `queues.update`'s arguments: leave the setting as it is (None removes a limit)."""

    UNCHANGED = "unchanged"


UNCHANGED = Unchanged.UNCHANGED


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a list, newest first; pass `next_cursor` back for the next one (None: this was the last)."""

    items: list[T]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class AckResult:
    """One item of a batched ack: `ok`, or `lease_lost` with the job's current status (None: no such job)."""

    id: str
    outcome: Literal["ok", "lease_lost"] | str
    status: JobStatus | str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AckResult:
        return cls(data["id"], data["outcome"], data.get("status"))


class _AckItem(msgspec.Struct):
    id: str
    outcome: str
    status: str | None = None


class _AckAnswer(msgspec.Struct):
    results: list[_AckItem]


# A busy worker acks a few hundred outcomes a call: read by msgspec, not `json.loads` and `from_json` item by item
# (0.9 -> 0.3 µs an item). Lenient as `from_json` is (a missing status is None, unknown fields are ignored);
# tests/sdk/test_ack_encoding.py holds the two to the same results.
_ACK_ANSWER = msgspec.json.Decoder(_AckAnswer)


def decode_ack_answer(content: bytes) -> list[AckResult]:
    """The results of a `POST /v1/worker/ack` answer's body."""
    return [AckResult(item.id, item.outcome, item.status) for item in _ACK_ANSWER.decode(content).results]


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    """One item of a batched heartbeat: `ok` with the lease's new end, or `lease_lost` (`locked_until` None)."""

    id: str
    outcome: Literal["ok", "lease_lost"]
    locked_until: datetime | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HeartbeatResult:
        until = data.get("locked_until")
        return cls(data["id"], data["outcome"], datetime.fromisoformat(until) if until is not None else None)


# ---- workflows -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Wait:
    """What a wait step waits for: the signal `signal` (failing after `timeout_seconds`, if given), or `seconds`;
    as a workflow reports it for a child step, `workflow`: the child workflow's id."""

    signal: str | None = None
    timeout_seconds: float | None = None
    seconds: float | None = None
    workflow: str | None = None

    def to_json(self) -> dict[str, Any]:
        if self.signal is not None:
            shape: dict[str, Any] = {"signal": self.signal}
            return shape if self.timeout_seconds is None else shape | {"timeout_seconds": self.timeout_seconds}
        return {"seconds": self.seconds}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Wait:
        return cls(
            signal=data.get("signal"),
            timeout_seconds=_seconds(data.get("timeout_seconds")),
            seconds=_seconds(data.get("seconds")),
            workflow=data.get("workflow"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One step of a workflow to create, or to add from a running step (`ctx.add_steps`): a job of `task_name`,
    a `wait`, or a child `workflow` (a body as `POST /v1/workflows` takes it), run once every step it `depends_on`
    has finished. `queueflow_client.steps` builds them (`steps.task`, `steps.signal`, `steps.sleep`,
    `steps.child`).

    `required_by` is for a step added at run time only: existing steps, still pending, that must now also wait
    for it (`split` adds `map_0..map_n`, each required by `reduce`)."""

    name: str
    task_name: str | None = None
    wait: Wait | None = None
    workflow: Mapping[str, Any] | None = None
    payload: Mapping[str, Any] = field(default_factory=dict)
    depends_on: abc.Sequence[str] = ()
    required_by: abc.Sequence[str] = ()
    on_failure: OnFailure = "halt"
    queue_name: str | None = None
    priority: int | None = None
    max_retries: int | None = None
    backoff: Backoff | None = None
    timeout_seconds: float | None = None
    concurrency_key: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The step as the API takes it. A wait step sends no job field (the server refuses any: 400)."""
        body: dict[str, Any] = {"name": self.name, "depends_on": list(self.depends_on), "on_failure": self.on_failure}
        if self.required_by:
            body["required_by"] = list(self.required_by)
        if self.wait is not None:
            return body | {"wait": self.wait.to_json()} | ({"task_name": self.task_name} if self.task_name else {})
        if self.workflow is not None:
            return body | {"workflow": dict(self.workflow)}
        options = {
            "task_name": self.task_name,
            "payload": dict(self.payload),
            "queue_name": self.queue_name,
            "priority": self.priority,
            "max_retries": self.max_retries,
            "backoff": self.backoff.to_json() if self.backoff is not None else None,
            "timeout_seconds": self.timeout_seconds,
            "concurrency_key": self.concurrency_key,
        }
        return body | {key: value for key, value in options.items() if value is not None}


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowStep:
    """A step as the workflow reports it: its status and, once enqueued, its job; a wait step's `wait` and, while
    it is `waiting`, `due_at` (a wait step has no job); `added_by`, the step that added it at run time (None:
    declared at creation)."""

    name: str
    task_name: str | None
    status: StepStatus | str
    job_id: str | None
    depends_on: list[str]
    on_failure: OnFailure
    wait: Wait | None = None
    due_at: datetime | None = None
    added_by: str | None = None
    child_workflow_id: str | None = None
    """A child step's workflow, once it created it (`client.workflows.get(...)`)."""
    error: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkflowStep:
        wait, due = data.get("wait"), data.get("due_at")
        return cls(
            name=data["name"],
            task_name=data.get("task_name"),
            status=data["status"],
            job_id=data.get("job_id"),
            depends_on=list(data["depends_on"]),
            on_failure=data["on_failure"],
            wait=Wait.from_json(wait) if wait is not None else None,
            due_at=datetime.fromisoformat(due) if due is not None else None,
            added_by=data.get("added_by"),
            child_workflow_id=data.get("child_workflow_id"),
            error=data.get("error"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Workflow:
    id: str
    tenant_id: str
    name: str
    status: WorkflowStatus | str
    context: dict[str, Any]
    steps: list[WorkflowStep]
    created_at: datetime
    completed_at: datetime | None
    parent: ParentRef | None = None
    """The step of another workflow whose child this is (None: a top workflow)."""
    timeout_seconds: float | None = None
    deadline: datetime | None = None
    """When it fails if still running (`created_at`, or its last retry, plus `timeout_seconds`)."""
    error: str | None = None
    """Why it ended, where a step does not say (`"timed out after N s"`)."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Workflow:
        return cls(
            id=data["id"],
            tenant_id=data["tenant_id"],
            name=data["name"],
            status=data["status"],
            context=dict(data["context"]),
            steps=[WorkflowStep.from_json(step) for step in data["steps"]],
            created_at=_required_time(data["created_at"]),
            completed_at=_time(data.get("completed_at")),
            parent=ParentRef.from_json(parent) if (parent := data.get("parent")) is not None else None,
            timeout_seconds=_seconds(data.get("timeout_seconds")),
            deadline=_time(data.get("deadline")),
            error=data.get("error"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ParentRef:
    """The step (`step`) of the workflow `workflow_id` whose child a workflow is."""

    workflow_id: str
    step: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ParentRef:
        return cls(workflow_id=data["workflow_id"], step=data["step"])


# ---- schedules -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    """A cron schedule: each occurrence of `cron` in `timezone` enqueues one `task_name` job, or starts one
    `workflow` (`{name, context, steps}`; its job fields are then None).

    `next_run_at` is the pending occurrence (None while disabled); `last_run_at` the latest that fired."""

    id: str
    tenant_id: str
    name: str
    cron: str
    timezone: str
    task_name: str | None
    queue_name: str | None
    payload: dict[str, Any] | None
    priority: int | None
    max_retries: int | None
    enabled: bool
    next_run_at: datetime | None
    last_run_at: datetime | None
    created_at: datetime
    updated_at: datetime
    workflow: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Schedule:
        return cls(
            id=data["id"],
            tenant_id=data["tenant_id"],
            name=data["name"],
            cron=data["cron"],
            timezone=data["timezone"],
            task_name=data.get("task_name"),
            queue_name=data.get("queue_name"),
            payload=dict(data["payload"]) if data.get("payload") is not None else None,
            priority=data.get("priority"),
            max_retries=data.get("max_retries"),
            enabled=data["enabled"],
            next_run_at=_time(data.get("next_run_at")),
            last_run_at=_time(data.get("last_run_at")),
            created_at=_required_time(data["created_at"]),
            updated_at=_required_time(data["updated_at"]),
            workflow=data.get("workflow"),
        )


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A push endpoint: the server POSTs the tenant's jobs of `queues` (of `task_names` only, if not None) to
    `url`, signed with `secret`, at most `concurrency` at once, each answered within `timeout_seconds`.

    `secret` is in full only in the answers of `endpoints.create` and `endpoints.rotate_secret` (keep it: the
    receiver verifies deliveries with it, `queueflow_client.verify_signature`); other reads show its prefix and last
    four characters. After a rotation the previous secret signs too until `previous_secret_until`.
    `in_flight`: deliveries awaiting an answer now; `delivered`: answered 2xx; `failed`: failed deliveries, the
    last one's reason in `last_error`."""

    id: str
    tenant_id: str
    name: str
    url: str
    queues: list[str]
    task_names: list[str] | None
    concurrency: int
    timeout_seconds: int
    paused: bool
    secret: str
    previous_secret_until: datetime | None
    in_flight: int
    delivered: int
    failed: int
    last_error: str | None
    last_delivery_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Endpoint:
        task_names = data.get("task_names")
        return cls(
            id=data["id"],
            tenant_id=data["tenant_id"],
            name=data["name"],
            url=data["url"],
            queues=list(data["queues"]),
            task_names=None if task_names is None else list(task_names),
            concurrency=data["concurrency"],
            timeout_seconds=data["timeout_seconds"],
            paused=data["paused"],
            secret=data["secret"],
            previous_secret_until=_time(data.get("previous_secret_until")),
            in_flight=data["in_flight"],
            delivered=data["delivered"],
            failed=data["failed"],
            last_error=data.get("last_error"),
            last_delivery_at=_time(data.get("last_delivery_at")),
            created_at=_required_time(data["created_at"]),
            updated_at=_required_time(data["updated_at"]),
        )


# ---- triggers and events ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Trigger:
    """What an event starts: every event named `event` (or, for `order.*`, every name starting with `order.`) whose
    payload holds `filter`'s top-level values enqueues `task` (a job, as `jobs.enqueue` takes it) or starts
    `workflow` (`{name, context, steps}`) — one of the two, the other None."""

    id: str
    tenant_id: str
    name: str
    event: str
    filter: dict[str, Any]
    task: dict[str, Any] | None
    workflow: dict[str, Any] | None
    enabled: bool
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Trigger:
        return cls(
            id=data["id"],
            tenant_id=data["tenant_id"],
            name=data["name"],
            event=data["event"],
            filter=dict(data["filter"]),
            task=data.get("task"),
            workflow=data.get("workflow"),
            enabled=data["enabled"],
            created_at=_required_time(data["created_at"]),
            updated_at=_required_time(data["updated_at"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Started:
    """One trigger an event started: its job (`job_id`) or its workflow (`workflow_id`)."""

    trigger: str
    job_id: str | None = None
    workflow_id: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Started:
        return cls(trigger=data["trigger"], job_id=data.get("job_id"), workflow_id=data.get("workflow_id"))


@dataclass(frozen=True, slots=True, kw_only=True)
class EventAccepted:
    """What an event started (nothing, when no trigger matched); for a repeated `id`, what its first send started."""

    event_id: str
    started: list[Started]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EventAccepted:
        return cls(event_id=data["event_id"], started=[Started.from_json(item) for item in data["started"]])
