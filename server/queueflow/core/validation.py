"""Input rules of the API (spec/openapi.json), checked in one place for the HTTP layer, the engine and embedders alike.

Every check collects all problems before it fails, so a caller learns every bad field at once.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Sequence
from datetime import UTC, datetime

from queueflow.core.errors import FieldError, ValidationError
from queueflow.core.jsonvalue import storage_errors
from queueflow.core.types import JSON, BackoffPolicy, JobStatus, NewJob, OnConflict, UniqueRule

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")
"""Queue and schedule names."""

MAX_DELAY_SECONDS = 315_360_000.0  # ten years
MAX_TIMEOUT_SECONDS = 604_800.0  # a week
MAX_LEASE_SECONDS = 3600.0
MAX_BATCH = 1000
MAX_LEASE_QUEUES = 50
MAX_PERIOD_SECONDS = 31_536_000
MAX_DEBOUNCE_SECONDS = 86_400.0
DEFAULT_UNIQUE_STATES = (JobStatus.PENDING, JobStatus.RETRYING, JobStatus.RUNNING)
"""The statuses a `unique` rule counts when it names none (`core.unique`)."""

Loc = tuple[str | int, ...]


def check(errors: list[FieldError]) -> None:
    if errors:
        raise ValidationError.of(errors)


def text_errors(value: str, loc: Loc, *, min_len: int = 1, max_len: int) -> list[FieldError]:
    if not isinstance(value, str):
        return [FieldError(loc, "must be a string")]
    if not min_len <= len(value) <= max_len:
        return [FieldError(loc, f"must be {min_len}–{max_len} characters long")]
    return storage_errors(value, loc)


def name_errors(value: str, loc: Loc) -> list[FieldError]:
    if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value):
        return [FieldError(loc, "must match ^[A-Za-z0-9_.:-]{1,100}$")]
    return []


def int_errors(value: int, loc: Loc, low: int, high: int) -> list[FieldError]:
    if isinstance(value, bool) or not isinstance(value, int):
        return [FieldError(loc, "must be an integer")]
    if not low <= value <= high:
        return [FieldError(loc, f"must be between {low} and {high}")]
    return []


def number_errors(value: float, loc: Loc, low: float, high: float) -> list[FieldError]:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return [FieldError(loc, "must be a number")]
    if not math.isfinite(value) or not low <= value <= high:
        return [FieldError(loc, f"must be between {low:g} and {high:g}")]
    return []


def object_errors(value: JSON, loc: Loc) -> list[FieldError]:
    if not isinstance(value, dict):
        return [FieldError(loc, "must be a JSON object")]
    return storage_errors(value, loc)


def backoff_errors(policy: BackoffPolicy, loc: Loc) -> list[FieldError]:
    errors = number_errors(policy.base_seconds, (*loc, "base_seconds"), 0.001, 86_400)
    errors += number_errors(policy.max_seconds, (*loc, "max_seconds"), 0.001, MAX_TIMEOUT_SECONDS)
    if not errors and policy.max_seconds < policy.base_seconds:
        errors.append(FieldError((*loc, "max_seconds"), "must be at least base_seconds"))
    return errors


def new_job_errors(job: NewJob, loc: Loc = ()) -> list[FieldError]:
    errors = text_errors(job.task_name, (*loc, "task_name"), max_len=200)
    errors += name_errors(job.queue_name, (*loc, "queue_name"))
    errors += object_errors(job.payload, (*loc, "payload"))
    errors += int_errors(job.priority, (*loc, "priority"), -1000, 1000)
    if job.run_at is not None:
        errors += _moment_errors(job.run_at, (*loc, "run_at"))
        if job.delay_seconds is not None:
            errors.append(FieldError((*loc, "delay_seconds"), "cannot be combined with run_at"))
    if job.delay_seconds is not None:
        errors += number_errors(job.delay_seconds, (*loc, "delay_seconds"), 0, MAX_DELAY_SECONDS)
    errors += int_errors(job.max_retries, (*loc, "max_retries"), 0, 100)
    errors += backoff_errors(job.backoff, (*loc, "backoff"))
    if job.timeout_seconds is not None:
        errors += number_errors(job.timeout_seconds, (*loc, "timeout_seconds"), 1, MAX_TIMEOUT_SECONDS)
    errors += object_errors(job.metadata, (*loc, "metadata"))
    if job.idempotency_key is not None:
        errors += text_errors(job.idempotency_key, (*loc, "idempotency_key"), max_len=255)
    if job.concurrency_key is not None:
        errors += text_errors(job.concurrency_key, (*loc, "concurrency_key"), max_len=200)
    if job.unique is not None:
        errors += unique_errors(job, loc)
    if job.expires_at is not None:
        errors += _moment_errors(job.expires_at, (*loc, "expires_at"))
        if job.expires_in_seconds is not None:
            errors.append(FieldError((*loc, "expires_in_seconds"), "cannot be combined with expires_at"))
    if job.expires_in_seconds is not None:
        errors += number_errors(job.expires_in_seconds, (*loc, "expires_in_seconds"), 0.001, MAX_DELAY_SECONDS)
    if job.sequence is not None:
        errors += text_errors(job.sequence.key, (*loc, "sequence", "key"), max_len=255)
    return errors


def _moment_errors(moment: datetime, loc: Loc) -> list[FieldError]:
    if not isinstance(moment, datetime) or moment.utcoffset() is None:
        return [FieldError(loc, "must be a date-time with a UTC offset")]
    if not _in_utc_range(moment):
        return [FieldError(loc, "is out of range once converted to UTC")]
    return []


def _in_utc_range(moment: datetime) -> bool:
    # 0001-01-01T00:00:00+04:00 is a valid date-time whose UTC instant falls before year 1.
    try:
        moment.astimezone(UTC)
    except OverflowError:
        return False
    return True


def check_new_jobs(jobs: Sequence[NewJob]) -> None:
    """Raise one ValidationError naming every bad field of a batch (locations start with the item index)."""
    if not 1 <= len(jobs) <= MAX_BATCH:
        raise ValidationError.of([FieldError(("jobs",), f"must hold 1–{MAX_BATCH} jobs")])
    if len(jobs) == 1:
        check(new_job_errors(jobs[0]))
        return
    if _plainly_valid(jobs):
        return
    errors: list[FieldError] = []
    for index, job in enumerate(jobs):
        errors += new_job_errors(job, ("jobs", index))
    check(errors)


_SETTINGS = operator.attrgetter(
    "task_name",
    "queue_name",
    "priority",
    "run_at",
    "delay_seconds",
    "max_retries",
    "backoff",
    "timeout_seconds",
    "expires_at",
    "expires_in_seconds",
)


def _plainly_valid(jobs: Sequence[NewJob]) -> bool:
    """Whether every job of a batch is valid, with each distinct combination of settings checked once.

    A batch is usually many rows of one task with the same options: this is one full check, then only the
    payload, metadata and key of each row (the per-row checks were a third of a batch enqueue's CPU). Any
    doubt, such as a value that cannot be hashed, answers False, and the caller checks row by row."""
    try:
        # A `unique` rule is a setting but for its key, which is checked row by row below.
        shapes = {(_SETTINGS(job), job.unique and _RULE_SETTINGS(job.unique)): job for job in jobs}
    except TypeError:
        return False
    if any(new_job_errors(job) for job in shapes.values()):
        return False
    return not any(
        object_errors(job.payload, ())
        or object_errors(job.metadata, ())
        or (job.idempotency_key is not None and text_errors(job.idempotency_key, (), max_len=255))
        or (job.concurrency_key is not None and text_errors(job.concurrency_key, (), max_len=200))
        or (job.unique is not None and text_errors(job.unique.key, (), max_len=255))
        for job in jobs
    )


_RULE_SETTINGS = operator.attrgetter(
    "states", "period_seconds", "on_conflict", "debounce_seconds", "debounce_max_seconds"
)  # fmt: skip


def unique_errors(job: NewJob, loc: Loc = ()) -> list[FieldError]:
    """Every 400 of the section for `job.unique` (and what debounce forbids beside it)."""
    rule = job.unique
    if rule is None:
        return []
    at: Loc = (*loc, "unique")
    errors = text_errors(rule.key, (*at, "key"), max_len=255)
    if rule.states is not None:
        if rule.period_seconds is not None:
            errors.append(FieldError((*at, "states"), "cannot be combined with period_seconds"))
        elif not rule.states:
            errors.append(FieldError((*at, "states"), "must name at least one status"))
        for i, state in enumerate(rule.states):
            if not isinstance(state, JobStatus):
                errors.append(FieldError((*at, "states", i), "must be a job status"))
    if rule.period_seconds is not None:
        errors += int_errors(rule.period_seconds, (*at, "period_seconds"), 1, MAX_PERIOD_SECONDS)
    if not isinstance(rule.on_conflict, OnConflict):
        errors.append(FieldError((*at, "on_conflict"), "must be one of skip, replace, error"))
    if rule.debounce_seconds is not None:
        errors += _debounce_errors(job, rule, rule.debounce_seconds, at, loc)
    elif rule.debounce_max_seconds is not None:
        errors.append(FieldError((*at, "debounce_max_seconds"), "requires debounce_seconds"))
    return errors


def _debounce_errors(job: NewJob, rule: UniqueRule, seconds: float, at: Loc, loc: Loc) -> list[FieldError]:
    errors = number_errors(seconds, (*at, "debounce_seconds"), 0.001, MAX_DEBOUNCE_SECONDS)
    if rule.on_conflict is not OnConflict.REPLACE:
        errors.append(FieldError((*at, "debounce_seconds"), 'requires on_conflict "replace"'))
    if rule.period_seconds is not None or (rule.states is not None and set(rule.states) != set(DEFAULT_UNIQUE_STATES)):
        errors.append(FieldError((*at, "debounce_seconds"), "requires the default states"))
    if job.run_at is not None:
        errors.append(FieldError((*loc, "run_at"), "cannot be combined with unique.debounce_seconds"))
    if job.delay_seconds is not None:
        errors.append(FieldError((*loc, "delay_seconds"), "cannot be combined with unique.debounce_seconds"))
    if rule.debounce_max_seconds is not None:
        # At least debounce_seconds when that is a number in range (its own error says so otherwise).
        low = seconds if not number_errors(seconds, (), 0.001, MAX_DEBOUNCE_SECONDS) else 0.001
        errors += number_errors(rule.debounce_max_seconds, (*at, "debounce_max_seconds"), low, MAX_DEBOUNCE_SECONDS)
    return errors


def lease_errors(
    queues: Sequence[str], max_jobs: int, lease_seconds: float, task_names: Sequence[str] | None = None
) -> list[FieldError]:
    errors: list[FieldError] = []
    if task_names is not None:
        if not 1 <= len(task_names) <= MAX_BATCH:
            errors.append(FieldError(("task_names",), f"must name 1–{MAX_BATCH} tasks"))
        for index, name in enumerate(task_names):
            errors += text_errors(name, ("task_names", index), max_len=200)
    if not 1 <= len(queues) <= MAX_LEASE_QUEUES:
        errors.append(FieldError(("queues",), f"must name 1–{MAX_LEASE_QUEUES} queues"))
    for index, queue in enumerate(queues):
        errors += name_errors(queue, ("queues", index))
    errors += int_errors(max_jobs, ("max_jobs",), 1, MAX_BATCH)
    errors += number_errors(lease_seconds, ("lease_seconds",), 1, MAX_LEASE_SECONDS)
    return errors
