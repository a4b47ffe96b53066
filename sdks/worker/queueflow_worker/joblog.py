"""A `WorkerLoop`'s lines (logger `queueflow_client.worker`, the name users configure, kept from when the loop was
part of the SDK), and per job one line on `queueflow_client.worker.jobs` (task, job id, delivery, outcome,
duration): at the loop's `job_log_level` (INFO) when it completed or asked to retry, at WARNING with the
traceback when it failed. A line's arguments are formatted only when its level is enabled."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from queueflow_worker.context import Delivery, Retry
from queueflow_worker.outcomes import Outcome, fate

__all__ = ["finished", "job_log", "log", "lost", "unknown_task"]

log = logging.getLogger("queueflow_client.worker")
job_log = logging.getLogger("queueflow_client.worker.jobs")
"""One line per job; a busy worker's INFO lines are many, so they have a logger of their own to silence."""


def finished(level: int, job: Delivery, outcome: Outcome, seconds: float, work: asyncio.Task[Any]) -> None:
    """The line of a task that ended and whose outcome is recorded."""
    if outcome.error is None:
        job_log.log(
            level, "%s job %s (delivery %d): completed in %.3f s", job.task_name, job.id, job.delivery_count, seconds
        )
        return
    exc = None if work.cancelled() else work.exception()
    summary = outcome.error.partition("\n")[0]
    if isinstance(exc, Retry):
        job_log.log(
            level,
            "%s job %s (delivery %d): asked to retry%s after %.3f s: %s",
            job.task_name,
            job.id,
            job.delivery_count,
            f" in {exc.after:g} s" if exc.after is not None else "",
            seconds,
            summary,
        )
        return
    job_log.warning(
        "%s job %s (delivery %d): failed after %.3f s (%s): %s",
        job.task_name,
        job.id,
        job.delivery_count,
        seconds,
        fate(job, outcome),
        summary,
        exc_info=exc,
    )


def lost(job: Delivery, seconds: float) -> None:
    job_log.warning(
        "%s job %s (delivery %d): the lease was lost (cancelled or reclaimed) after %.3f s; its result is dropped",
        job.task_name,
        job.id,
        job.delivery_count,
        seconds,
    )


def unknown_task(name: str, level: int, job: Delivery, known: str, first: bool) -> None:
    """A job of a task the registry does not have (`first`: the first of its task name)."""
    if first:
        log.warning(
            "%s: leased job %s of task %r, which this worker does not have (it knows: %s): dead-lettering it"
            " (replay it from the dead-letter queue once a worker runs the task); further %r jobs are logged"
            " per job only",
            name,
            job.id,
            job.task_name,
            known,
            job.task_name,
        )
    job_log.log(
        level, "%s job %s (delivery %d): unknown task, dead-lettered", job.task_name, job.id, job.delivery_count
    )
