"""The queues part of the in-memory store: the `QueueStore` methods (flow-control settings, which `MemoryJobs`'s
claim obeys, and what is known of each queue's jobs), on the shared `Tables`."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import UTC, datetime

from queueflow.core.errors import FieldError, ValidationError
from queueflow.core.flow import KEEP, Backlog, ConfigureRequest, QueueSettings, tokens_at
from queueflow.core.jsonvalue import storable_text
from queueflow.core.types import CLAIMABLE, JobStatus, QueueCounts, QueueMinute
from queueflow.stores.memory.state import Tables

# `queue_throughput` counts these endings, under these names.
_ENDED = {JobStatus.COMPLETED: "completed", JobStatus.DEAD_LETTER: "dead_lettered"}


class MemoryQueues(Tables):
    async def queue_overview(
        self, *, tenant_id: str, queue_name: str | None = None, now: datetime
    ) -> tuple[dict[str, QueueSettings], list[QueueCounts]]:
        counts = [queue for queue in self._queue_counts(tenant_id, now) if queue_name in (None, queue.name)]
        return self._configured_queues(tenant_id, queue_name), counts

    def _queue_counts(self, tenant_id: str, now: datetime) -> list[QueueCounts]:
        counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        oldest: dict[str, datetime] = {}
        for job in self._tenant_jobs(tenant_id):
            queue = counts[job.queue_name]
            if job.status in CLAIMABLE:
                if job.scheduled_at <= now:
                    queue["pending"] += 1
                    if job.queue_name not in oldest or job.scheduled_at < oldest[job.queue_name]:
                        oldest[job.queue_name] = job.scheduled_at
                else:
                    queue["scheduled"] += 1
            if job.status not in (JobStatus.PENDING,):
                queue[job.status.value] += 1
        return [
            QueueCounts(name=name, oldest_due_at=oldest.get(name), **by_state)
            for name, by_state in sorted(counts.items())
        ]

    def _configured_queues(self, tenant_id: str, queue_name: str | None) -> dict[str, QueueSettings]:
        return {
            queue: settings
            for (tenant, queue), settings in sorted(self._queue_settings.items())
            if tenant == tenant_id and (queue_name is None or queue == queue_name)
        }

    async def queue_backlogs(self, *, now: datetime) -> list[Backlog]:
        backlogs = []
        for (tenant, queue), settings in sorted(self._queue_settings.items()):
            if not settings.restricts:
                continue
            mine = [job for job in self._jobs.values() if job.tenant_id == tenant and job.queue_name == queue]
            running = [job for job in mine if job.status is JobStatus.RUNNING]
            due_by_key: Counter[str | None] = Counter(
                job.concurrency_key for job in mine if job.status in CLAIMABLE and job.scheduled_at <= now
            )
            running_by_key = Counter(job.concurrency_key for job in running if job.concurrency_key is not None)
            tokens = None
            if settings.rate_limit is not None:
                held, since = self._buckets[tenant, queue]
                tokens = tokens_at(settings.rate_limit, held, since, now)
            backlogs.append(
                Backlog(
                    queue_name=queue,
                    settings=settings,
                    tokens=tokens,
                    running=len(running),
                    due_by_key=dict(due_by_key),
                    running_by_key=dict(running_by_key),
                )
            )
        return backlogs

    async def queue_configure(self, request: ConfigureRequest) -> QueueSettings:
        tenant_id, queue_name, patch, now = request.tenant_id, request.queue_name, request.patch, request.now
        if not (storable_text(tenant_id) and storable_text(queue_name)):
            raise ValidationError.of([FieldError(("name",), "holds text that cannot be stored")])
        key = (tenant_id, queue_name)
        settings = self._queue_settings[key] = patch.applied_to(self._queue_settings.get(key, QueueSettings()))
        if patch.rate_limit is not KEEP:  # a new or changed rate starts with a full bucket
            if settings.rate_limit is None:
                self._buckets.pop(key, None)
            else:
                self._buckets[key] = (float(settings.rate_limit.jobs), now)
        if self._wakeups is not None:
            self._wakeups.notify(queue_name)
        return settings

    async def queue_throughput(self, *, tenant_id: str, since: datetime) -> list[QueueMinute]:
        counts: dict[tuple[str, datetime], dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for job in self._tenant_jobs(tenant_id):
            if job.status in _ENDED and job.completed_at is not None and job.completed_at >= since:
                minute = job.completed_at.astimezone(UTC).replace(second=0, microsecond=0)
                counts[job.queue_name, minute][_ENDED[job.status]] += 1
        return [QueueMinute(name=name, minute=minute, **by_end) for (name, minute), by_end in sorted(counts.items())]
