"""`GET /v1/jobs/{id}?wait_seconds=` and `GET /v1/workflows/{id}?wait_seconds=`: answer once the object finishes.

The waiter asks the store to announce the finish (`Engine.watch_job`: PostgreSQL then NOTIFYs `queueflow_done` from
whichever process records it) after arming its watch, so a finish between the two is never missed, then re-reads
the object on every wake-up. As with a long-poll lease, the deadline is the caller's patience (monotonic time, not
the engine's clock), capped by `lease_wait_limit`; each wait is capped at the safety poll, so a lost notification
costs at most that long; a server that is shutting down answers with the object as it is.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from queueflow.core.types import FINISHED, Job
from queueflow.core.workflow import Workflow, WorkflowStatus
from queueflow.engine import Engine
from queueflow.runtime.wakeups import Wakeups
from queueflow.settings import Settings

T = TypeVar("T")


async def job_when_finished(
    engine: Engine, wakeups: Wakeups, settings: Settings, tenant_id: str, job_id: str, wait_seconds: float
) -> Job:
    """The job once it is completed, dead-lettered or cancelled, or as it is after `wait_seconds`."""
    return await _when(
        wakeups,
        settings,
        job_id,
        wait_seconds,
        watch=lambda: engine.watch_job(tenant_id, job_id),
        read=lambda: engine.get_job(tenant_id, job_id),
        done=lambda job: job.status in FINISHED,
    )


async def workflow_when_finished(
    engine: Engine, wakeups: Wakeups, settings: Settings, tenant_id: str, workflow_id: str, wait_seconds: float
) -> Workflow:
    """The workflow once it is no longer running, or as it is after `wait_seconds`."""
    return await _when(
        wakeups,
        settings,
        workflow_id,
        wait_seconds,
        watch=lambda: engine.watch_workflow(tenant_id, workflow_id),
        read=lambda: engine.get_workflow(tenant_id, workflow_id),
        done=lambda workflow: workflow.status is not WorkflowStatus.RUNNING,
    )


async def _when(
    wakeups: Wakeups,
    settings: Settings,
    object_id: str,
    wait_seconds: float,
    *,
    watch: Callable[[], Awaitable[T]],
    read: Callable[[], Awaitable[T]],
    done: Callable[[T], bool],
) -> T:
    patience = min(wait_seconds, settings.lease_wait_limit)
    if patience <= 0:
        return await read()
    deadline = time.monotonic() + patience
    with wakeups.watching_finish(object_id) as finish:
        current = await watch()
        while not done(current):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or wakeups.closing:
                break
            await finish.wait(min(remaining, settings.safety_poll))
            current = await read()
        return current
