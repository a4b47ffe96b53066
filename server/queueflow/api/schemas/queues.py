"""The wire shapes of queues: their counts and settings (flow control, retention), and a PATCH of those settings."""

from __future__ import annotations

from typing import Annotated

from litestar.params import PathParameter
from msgspec import UNSET, Meta, Struct, UnsetType

from queueflow.api.schemas.common import RequestBody
from queueflow.core import flow, retention, validation
from queueflow.core import types as domain

Limit = Annotated[int, Meta(ge=1, le=flow.MAX_LIMIT)]
RetentionSeconds = Annotated[
    int,
    Meta(
        ge=retention.MIN_RETENTION_SECONDS,
        le=retention.MAX_RETENTION_SECONDS,
        description=(
            "Finished jobs (completed, dead_letter, cancelled) of this queue whose completed_at is older than this"
            " are deleted, at the latest an hour after that age (workflow step jobs once their workflow has"
            " finished); null: the server's --retention-hours applies, or, without it, they are kept"
        ),
    ),
]


class RateLimit(RequestBody):
    """At most `jobs` leases per `per_seconds`, across all workers: a token bucket (burst `jobs`, refilled
    continuously)."""

    jobs: Annotated[int, Meta(ge=1, le=flow.MAX_RATE_JOBS)]
    per_seconds: Annotated[float, Meta(ge=flow.MIN_RATE_SECONDS, le=flow.MAX_RATE_SECONDS)]


class Queue(Struct, kw_only=True):
    """A queue's job counts (disjoint by state) and the tenant's settings for it: flow control and retention."""

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
    retention_seconds: RetentionSeconds | None = None
    """Optional in the spec: a field added after 0.2.0, which an older server leaves out."""

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
            retention_seconds=settings.retention_seconds,
        )


class QueueList(Struct):
    queues: list[Queue]


class UpdateQueue(RequestBody):
    """A PATCH of a queue's settings: an absent field stays as it is; `null` removes a limit (or the queue's own
    retention)."""

    paused: bool | UnsetType = UNSET
    concurrency_limit: Limit | UnsetType | None = UNSET
    key_concurrency_limit: Limit | UnsetType | None = UNSET
    rate_limit: RateLimit | UnsetType | None = UNSET
    retention_seconds: RetentionSeconds | UnsetType | None = UNSET

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
            retention_seconds=flow.KEEP if self.retention_seconds is UNSET else self.retention_seconds,
        )


QueueNamePath = Annotated[str, PathParameter(pattern=validation.NAME_PATTERN.pattern, min_length=1, max_length=100)]
