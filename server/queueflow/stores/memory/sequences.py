"""Sequences in the in-memory store (`core.sequences`): the claim's test of a job's sequence, `blocked_by`, and a
resume, on the shared `Tables`' index of each sequence's jobs."""

from __future__ import annotations

from collections.abc import Sequence

from msgspec.structs import replace

from queueflow.core.sequences import blocked_by, free_to_start
from queueflow.core.types import Job, JobStatus
from queueflow.stores.memory.state import Tables


class MemorySequences(Tables):
    def _sequence_jobs(self, job: Job) -> list[Job]:
        if job.sequence_key is None:
            return []
        ids = self._sequences.get((job.tenant_id, job.sequence_key), set())
        return [self._jobs[job_id] for job_id in ids if job_id in self._jobs]

    def _sequence_free(self, job: Job) -> bool:
        """Whether `job`'s sequence (if any) lets a claim take it now."""
        return job.sequence_key is None or free_to_start(job, self._sequence_jobs(job))

    async def sequence_blocked_by(self, job_ids: Sequence[str], *, tenant_id: str) -> dict[str, str]:
        found: dict[str, str] = {}
        for job_id in job_ids:
            job = self._jobs.get(job_id)
            if job is None or job.tenant_id != tenant_id:
                continue
            blocker = blocked_by(job, self._sequence_jobs(job))
            if blocker is not None:
                found[job_id] = blocker
        return found

    async def sequence_resume(self, key: str, *, tenant_id: str) -> bool | None:
        ids = self._sequences.get((tenant_id, key), set())
        jobs = [self._jobs[job_id] for job_id in ids if job_id in self._jobs]
        if not jobs:
            return None
        halted = [job for job in jobs if job.status is JobStatus.DEAD_LETTER and job.sequence_halt]
        for job in halted:
            self._jobs[job.id] = replace(job, sequence_halt=False)
        if halted and self._wakeups is not None:
            for queue in {job.queue_name for job in jobs}:
                self._wakeups.notify(queue)
        return bool(halted)
