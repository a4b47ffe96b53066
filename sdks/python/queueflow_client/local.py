"""Running a task without a server, for tests: `tasks.run_local("send_email", {...})`.

The task runs as a worker would run it (an `async def` on an event loop, a plain `def` in a thread), on the
payload as a worker would receive it: through JSON, so a `datetime` or a tuple fails or changes here as it would
there, and a dataclass, Struct or model payload is encoded as a `Task` handle would send it. Its `JobContext` is
for a job that exists nowhere: `ctx.heartbeat()` answers True, and `ctx.cancelled` stays False until the test
calls `ctx.lose()`. Its return value is returned (it must be JSON, as a worker requires); what it raises —
`Retry`, `Fatal`, any exception — is raised, for the test to assert on.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from queueflow_worker.context import JobContext, invoke
from queueflow_worker.ports import TaskRunner

from queueflow_client.handles import encode

__all__ = ["LocalJob", "run_local", "run_local_async"]


@dataclass(frozen=True)
class LocalJob:
    """The job a local run pretends to be delivering (a `Delivery`)."""

    task_name: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    id: str = "job_local"
    queue_name: str = "default"
    delivery_count: int = 1
    workflow_id: str | None = None
    workflow_step_id: str | None = None
    deadline: datetime | None = None


class _NoLease:
    async def heartbeat(self) -> bool:
        return True

    async def progress(self, value: Any) -> bool:
        return True


async def run_local_async(tasks: TaskRunner, task_name: str, payload: Any = None, **job: Any) -> Any:
    """Run the task `task_name` of `tasks` once on `payload`; `job` sets the fake job's other fields
    (`delivery_count=3`, `id=…`, `queue_name=…`, `workflow_id=…`, `deadline=…`)."""
    function = tasks.function(task_name)
    if function is None:
        known = ", ".join(tasks.names) or "none"
        raise KeyError(f"no task named {task_name!r} is registered (it has: {known})")
    try:
        sent = json.loads(json.dumps(encode(payload) if payload is not None else {}, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"the payload cannot be sent as JSON: {exc}") from exc
    if not isinstance(sent, dict):
        raise TypeError(f"the payload must be a JSON object, not {type(sent).__name__}")
    delivery = LocalJob(task_name, sent, **job)
    result = await invoke(function, dict(sent), JobContext(delivery, _NoLease()))
    try:
        json.dumps(result, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"the task's result is not JSON (a worker would dead-letter the job): {exc}") from exc
    return result


def run_local(tasks: TaskRunner, task_name: str, payload: Any = None, **job: Any) -> Any:
    """`run_local_async` from code that is not in an event loop (a plain test function)."""
    return asyncio.run(run_local_async(tasks, task_name, payload, **job))
