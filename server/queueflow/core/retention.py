"""Retention, as data: how long a queue's finished jobs are kept, and when one of them is due for deletion.

A queue's own `retention_seconds` (a queue setting, `flow.QueueSettings`) wins; without it the server's default
(`--retention-hours`) applies; without either, finished jobs are kept. A job is expired once its `completed_at` is
older than that. The stores delete expired jobs in bounded batches, at the latest `LATEST_AFTER` past the age: the
slack is what lets a store keep its history in time ranges and drop a whole range at once.

No I/O here. The in-memory store decides each job with `expired`; the PostgreSQL store states the same rule in SQL.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from queueflow.core.errors import FieldError

MIN_RETENTION_SECONDS = 60
MAX_RETENTION_SECONDS = 315_360_000
"""Ten years: more is "keep", which is null."""

LATEST_AFTER = timedelta(hours=1)
"""How long past its retention an expired job may still be stored (and answer reads as before)."""


def retention_of(own_seconds: int | None, default: timedelta | None) -> timedelta | None:
    """How long a queue keeps its finished jobs: its own retention, else the server's default; None keeps them."""
    return timedelta(seconds=own_seconds) if own_seconds is not None else default


def expired(completed_at: datetime | None, retention: timedelta | None, now: datetime) -> bool:
    """Whether a finished job that ended at `completed_at`, in a queue keeping its jobs `retention`, may go now.

    Whether it may go at all (finished, not a step of a running workflow) is the caller's to check first."""
    return retention is not None and completed_at is not None and completed_at < now - retention


def retention_errors(value: int | None, loc: tuple[str | int, ...]) -> list[FieldError]:
    """What is wrong with a queue's `retention_seconds` (a whole number of seconds, 60 to ten years, or null)."""
    if value is None or MIN_RETENTION_SECONDS <= value <= MAX_RETENTION_SECONDS:
        return []
    return [FieldError(loc, f"must be between {MIN_RETENTION_SECONDS} and {MAX_RETENTION_SECONDS}, or null")]
