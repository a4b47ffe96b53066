"""Deadlines (README.md, "Deadlines"): a job not started by its `expires_at` is never started. Pure: the stores'
claims leave a job whose `expires_at` has passed (`is_expired`: the claim's condition, negated), the wait timer's
pass reads those jobs and records what `expiry` decided, and a failure whose retry would come too late dead-letters
at once (`failure`). The input checks of the two fields are `core.validation.new_job_errors`'s; the one that needs
the job's row (later than its `scheduled_at`) is `row_errors`.

"Started" means leased: once a delivery has begun it runs to its end (its `timeout_seconds` bounds it), and only the
time of the next start matters.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import msgspec

from queueflow.core.errors import FieldError
from queueflow.core.schedule import utc_text
from queueflow.core.types import Failure, Job, NewJob

Loc = tuple[str | int, ...]

EXPIRED_PREFIX = "expired: not started by "


class Expiry(msgspec.Struct, frozen=True):
    """A job the timer dead-letters for its deadline, with the error it records (`JobStore.job_expire_many`)."""

    job_id: str
    error: str


def expires_at_of(job: NewJob, now: datetime) -> datetime | None:
    """The deadline of the row `job` is inserted as at `now`: its `expires_at`, or `expires_in_seconds` from now."""
    if job.expires_at is not None:
        return job.expires_at.astimezone(now.tzinfo)
    if job.expires_in_seconds is not None:
        return now + timedelta(seconds=job.expires_in_seconds)
    return None


def row_errors(jobs: Sequence[NewJob], rows: Sequence[Job]) -> list[FieldError]:
    """A deadline must come after the row's `scheduled_at` (a job due at or after it could never start): one error
    per such item, at the field it was given as (locations start with the item index in a batch of several)."""
    errors = []
    for index, (job, row) in enumerate(zip(jobs, rows, strict=True)):
        if row.expires_at is not None and row.expires_at <= row.scheduled_at:
            field = "expires_at" if job.expires_at is not None else "expires_in_seconds"
            loc: Loc = ("jobs", index, field) if len(jobs) > 1 else (field,)
            errors.append(FieldError(loc, "must be later than the job's scheduled_at"))
    return errors


def is_expired(job: Job, now: datetime) -> bool:
    """Whether `job`'s deadline has passed at `now`: from then on no claim starts it."""
    return job.expires_at is not None and job.expires_at <= now


def expired_message(expires_at: datetime) -> str:
    """The error an expired job is dead-lettered with; the time printed as the API prints a job's timestamps."""
    return f"{EXPIRED_PREFIX}{utc_text(expires_at)}"


def expiry(job: Job, now: datetime) -> Expiry | None:
    """pending | retrying past its deadline → dead_letter with `expired_message`; None for a job still in time."""
    if job.expires_at is None or not is_expired(job, now):
        return None
    return Expiry(job.id, expired_message(job.expires_at))


def failure(job: Job, lease_token: str, error: str, retry_at: datetime | None) -> Failure:
    """A failed delivery of `job`, retried at `retry_at` (None: dead-lettered). A retry that would not be due before
    the job's deadline could never start: it dead-letters at once, as the timer would end it, with its message."""
    if retry_at is not None and job.expires_at is not None and retry_at >= job.expires_at:
        return Failure(job.id, lease_token, expired_message(job.expires_at), None)
    return Failure(job.id, lease_token, error, retry_at)
