"""Flow control, as data: a tenant's settings for one queue (README.md, "Flow control") and a change to them.

No I/O here. The stores keep the settings and honour them in the claim (and, for `retention_seconds`, in the
janitor's retention: `core.retention`); the engine validates a change with `patch_errors` before any store sees it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from queueflow.core.errors import FieldError
from queueflow.core.retention import retention_errors

MAX_LIMIT = 100_000
MAX_RATE_JOBS = 100_000
MIN_RATE_SECONDS = 0.001
MAX_RATE_SECONDS = 86_400.0


class Keep(Enum):
    """A patch field's "leave it as it is" (None already means "no limit")."""

    KEEP = "keep"


KEEP = Keep.KEEP


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most `jobs` leases per `per_seconds` (a token bucket: burst `jobs`, refilled continuously)."""

    jobs: int
    per_seconds: float


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueSettings:
    """One tenant's flow control of one queue, and how long it keeps finished jobs; the defaults are a queue nobody
    configured."""

    paused: bool = False
    concurrency_limit: int | None = None
    key_concurrency_limit: int | None = None
    rate_limit: RateLimit | None = None
    retention_seconds: int | None = None
    """Finished jobs older than this are deleted (`core.retention`); None: the server's default applies."""

    @property
    def restricts(self) -> bool:
        """Whether any lease of this tenant's jobs in the queue has to consult these settings."""
        return (
            self.paused
            or self.concurrency_limit is not None
            or self.key_concurrency_limit is not None
            or self.rate_limit is not None
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueSettingsPatch:
    """A PATCH of `QueueSettings`: `KEEP` leaves a field as it is, None removes a limit."""

    paused: bool | Keep = KEEP
    concurrency_limit: int | Keep | None = KEEP
    key_concurrency_limit: int | Keep | None = KEEP
    rate_limit: RateLimit | Keep | None = KEEP
    retention_seconds: int | Keep | None = KEEP

    def applied_to(self, settings: QueueSettings) -> QueueSettings:
        return QueueSettings(
            paused=settings.paused if self.paused is KEEP else self.paused,
            concurrency_limit=(
                settings.concurrency_limit if self.concurrency_limit is KEEP else self.concurrency_limit
            ),
            key_concurrency_limit=(
                settings.key_concurrency_limit if self.key_concurrency_limit is KEEP else self.key_concurrency_limit
            ),
            rate_limit=settings.rate_limit if self.rate_limit is KEEP else self.rate_limit,
            retention_seconds=(
                settings.retention_seconds if self.retention_seconds is KEEP else self.retention_seconds
            ),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigureRequest:
    """What one configuration asks of the store (`QueueStore.queue_configure`): `patch` applied to the settings of
    the tenant's queue `queue_name` at `now`."""

    tenant_id: str
    queue_name: str
    patch: QueueSettingsPatch
    now: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Backlog:
    """A restricted (tenant, queue) as a claim would find it at one instant: its settings, its rate bucket's tokens
    then (None without a rate limit), and its due and running jobs, in all and per `concurrency_key`."""

    queue_name: str
    settings: QueueSettings
    tokens: float | None
    running: int
    due_by_key: dict[str | None, int]
    running_by_key: dict[str, int]


HELD_BACK_REASONS = ("paused", "concurrency", "key_concurrency", "rate")


def held_back(backlog: Backlog) -> dict[str, int]:
    """How many of the backlog's due jobs flow control holds back now, by reason (`HELD_BACK_REASONS`), each job
    under the first reason that holds it: a pause holds everything, a full concurrency limit everything else, a
    concurrency key at its limit that key's jobs, and an empty rate bucket whatever is left."""
    settings = backlog.settings
    due = sum(backlog.due_by_key.values())
    if not due:
        return {}
    if settings.paused:
        return {"paused": due}
    if settings.concurrency_limit is not None and backlog.running >= settings.concurrency_limit:
        return {"concurrency": due}
    held: dict[str, int] = {}
    limit = settings.key_concurrency_limit
    if limit is not None:
        keyed = sum(
            count
            for key, count in backlog.due_by_key.items()
            if key is not None and backlog.running_by_key.get(key, 0) >= limit
        )
        if keyed:
            held["key_concurrency"] = keyed
            due -= keyed
    if due and backlog.tokens is not None and backlog.tokens < 1:
        held["rate"] = due
    return held


def tokens_at(rate: RateLimit, tokens: float, refilled_at: datetime, now: datetime) -> float:
    """A token bucket's tokens at `now`: `tokens` as of `refilled_at`, refilled continuously at `rate.jobs` per
    `rate.per_seconds`, never above the burst `rate.jobs`. A `now` before `refilled_at` (another process's clock
    running behind) adds nothing rather than taking tokens back."""
    elapsed = max(0.0, (now - refilled_at).total_seconds())
    return min(float(rate.jobs), tokens + elapsed * rate.jobs / rate.per_seconds)


def next_token_at(rate: RateLimit, tokens: float, refilled_at: datetime, now: datetime) -> datetime | None:
    """When the bucket next holds a whole token, if it holds none at `now` (None: it holds one already)."""
    held = tokens_at(rate, tokens, refilled_at, now)
    if held >= 1:
        return None
    return now + timedelta(seconds=(1 - held) * rate.per_seconds / rate.jobs)


def patch_errors(patch: QueueSettingsPatch) -> list[FieldError]:
    """What is out of bounds in `patch` (limits 1–100,000; rate 1–100,000 jobs per 0.001–86,400 s; retention 60 s
    to ten years)."""
    errors: list[FieldError] = []
    for name in ("concurrency_limit", "key_concurrency_limit"):
        value = getattr(patch, name)
        if isinstance(value, int) and not 1 <= value <= MAX_LIMIT:
            errors.append(FieldError((name,), f"must be between 1 and {MAX_LIMIT}, or null"))
    rate = patch.rate_limit
    if isinstance(rate, RateLimit):
        if not 1 <= rate.jobs <= MAX_RATE_JOBS:
            errors.append(FieldError(("rate_limit", "jobs"), f"must be between 1 and {MAX_RATE_JOBS}"))
        if not (math.isfinite(rate.per_seconds) and MIN_RATE_SECONDS <= rate.per_seconds <= MAX_RATE_SECONDS):
            errors.append(
                FieldError(
                    ("rate_limit", "per_seconds"), f"must be between {MIN_RATE_SECONDS} and {MAX_RATE_SECONDS:g}"
                )
            )
    if not isinstance(patch.retention_seconds, Keep):
        errors += retention_errors(patch.retention_seconds, ("retention_seconds",))
    return errors
