"""Sequences (README.md, "Sequences"; issue 43): jobs of one tenant with the same sequence key run one at a time,
in the order of their ids, across every queue and worker.

The rule is a predicate on the jobs of a sequence, with no state of its own to keep in step with them: a job
*holds* its sequence while it is pending, retrying or running (so a retry keeps its place), or dead-lettered with
`on_failure: halt` until a resume moves the sequence past it (`sequence_halt`). A job is claimable only when no
earlier job of its sequence holds it and none of it is running (a replayed earlier job must not overlap a later one
already started). A cancelled job never holds. Both stores apply this predicate in their claim; PostgreSQL reads
it from a partial index of the holding jobs (migrations 0018, 0021). PostgreSQL also keeps a job that waits behind
an earlier one out of its claim index (`sequence_waiting`, migration 0021), so that a claim does not read every job
a sequence holds back; that flag only spares reads, and the predicate alone decides what a claim takes.
"""

from __future__ import annotations

from collections.abc import Iterable

from queueflow.core.types import Job, JobStatus

LIVE = frozenset({JobStatus.PENDING, JobStatus.RETRYING, JobStatus.RUNNING})


def holds(job: Job) -> bool:
    """Whether `job` keeps the later jobs of its sequence from being claimed."""
    return job.status in LIVE or (job.status is JobStatus.DEAD_LETTER and job.sequence_halt)


def free_to_start(job: Job, others: Iterable[Job]) -> bool:
    """Whether the sequence lets `job` be claimed, given the other jobs of its sequence (`others`, any order)."""
    for other in others:
        if other.id == job.id:
            continue
        if other.status is JobStatus.RUNNING or (other.id < job.id and holds(other)):
            return False
    return True


def blocked_by(job: Job, others: Iterable[Job]) -> str | None:
    """The halted job `job` waits behind (the earliest dead-lettered one of its sequence, before it, that holds it),
    while `job` is still to start; None otherwise."""
    if job.sequence_key is None or job.status not in (JobStatus.PENDING, JobStatus.RETRYING):
        return None
    dead = [o.id for o in others if o.id < job.id and o.status is JobStatus.DEAD_LETTER and o.sequence_halt]
    return min(dead, default=None)
