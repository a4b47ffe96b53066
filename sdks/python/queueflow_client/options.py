"""What an enqueue takes beside its task: defined once, here, for every way of enqueueing — `jobs.enqueue` and
`jobs.run` (sync and async), a typed task's `Task.enqueue` and `Task.job`, `jobs.enqueue_many`'s items and the
transactional `enqueue_in` / `enqueue_in_sync`. Each takes `**options: Unpack[EnqueueOptions]`, so mypy checks
the names and types wherever a job is enqueued (tests/sdk/test_enqueue_options.py holds them to the spec).

An option left out, or given as None, is not sent: the server's default applies.
"""

# No `from __future__ import annotations`: TypedDict reads `Required[...]` only from an evaluated annotation.
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Required, TypedDict

from queueflow_client.types import Backoff, Sequence, Unique

__all__ = ["EnqueueOptions", "JobOptions"]


class EnqueueOptions(TypedDict, total=False):
    """The options of one job: its keyword arguments but for the task name and the payload."""

    queue_name: str | None
    priority: int | None
    run_at: datetime | None
    delay_seconds: float | None
    max_retries: int | None
    backoff: Backoff | Mapping[str, Any] | None
    timeout_seconds: float | None
    metadata: Mapping[str, Any] | None
    idempotency_key: str | None
    """With a key the server has seen, it answers with the original job, unchanged (the client makes one up when
    none is given, so that its own retries are safe)."""
    concurrency_key: str | None
    unique: Unique | Mapping[str, Any] | None
    """At most one job of its key in the given states (or period): `Unique(key=..., on_conflict=...)`."""
    expires_at: datetime | None
    """Not started by then, the job is never started: it is dead-lettered ("expired: not started by …")."""
    expires_in: float | timedelta | None
    """`expires_at` as seconds (or a timedelta) from the enqueue, by the server's clock; not with `expires_at`."""
    sequence: Sequence | Mapping[str, Any] | None
    """Run after every earlier job of its key, one at a time: `Sequence(key=..., on_failure="halt")`."""


class JobOptions(EnqueueOptions, total=False):
    """One job of `jobs.enqueue_many`: the task name, its payload and its options, as keys."""

    task_name: Required[str]
    payload: Mapping[str, Any] | None
