"""The deadlines part of the in-memory store (`core.deadlines`): the jobs past their `expires_at`, read and then
dead-lettered as the engine decided."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from msgspec.structs import replace

from queueflow.core.deadlines import Expiry, is_expired
from queueflow.core.types import CLAIMABLE, Job, JobStatus
from queueflow.stores.memory.state import Tables


class MemoryDeadlines(Tables):
    async def job_expiring(self, *, limit: int, now: datetime) -> list[Job]:
        due = [job for job in self._jobs.values() if job.status in CLAIMABLE and is_expired(job, now)]
        due.sort(key=lambda job: (job.expires_at or now, job.id))
        return [self._out(job) for job in due[:limit]]

    async def job_expire_many(self, expiries: Sequence[Expiry], *, now: datetime) -> list[Job]:
        expired: list[Job] = []
        for item in expiries:
            job = self._jobs.get(item.job_id)
            if job is None or job.status not in CLAIMABLE or not is_expired(job, now):
                continue
            job = self._jobs[job.id] = replace(
                job, status=JobStatus.DEAD_LETTER, error_message=item.error, completed_at=now
            )
            expired.append(self._out(job))
        self._announce_finished(job.id for job in expired)
        return expired

    async def job_next_expiry(self) -> datetime | None:
        return min(
            (job.expires_at for job in self._jobs.values() if job.status in CLAIMABLE and job.expires_at is not None),
            default=None,
        )
