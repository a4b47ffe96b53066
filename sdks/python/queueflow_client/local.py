"""Running a task without a server, for tests: `tasks.run_local("send_email", {...})`.

The task runs as a worker would run it (an `async def` on an event loop, a plain `def` in a thread), on the
payload as a worker would receive it: through JSON, so a `datetime` or a tuple fails or changes here as it would
there, and a dataclass, Struct or model payload is encoded as a `Task` handle would send it. Its `JobContext` is
for a job that exists nowhere: `ctx.heartbeat()` answers True, and `ctx.cancelled` stays False until the test
calls `ctx.lose()`. Its return value is returned (it must be JSON, as a worker requires); what it raises —
`Retry`, `Fatal`, any exception — is raised, for the test to assert on.

What the task reported on the way is kept on a `LocalLease` the test passes (`lease=`): every `ctx.progress(...)`
value, and every step `ctx.add_steps([...])` added (as the API would receive it), so a test asserts a split step
adds its map steps without a server:

    lease = LocalLease()
    tasks.run_local("split", {"rows": [1, 2, 3]}, lease=lease, workflow_step_id="split")
    assert [step["name"] for step in lease.added_steps] == ["map_0", "map_1", "map_2"]

`ctx.add_steps` needs the fake job to be a workflow step (`workflow_step_id=`), as the server does (else an
InvalidStateError), and checks what the client can: a name given twice, or already added in this run, is a
ValidationError.
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

from queueflow_client.errors import FieldError, InvalidStateError, ValidationError
from queueflow_client.handles import encode
from queueflow_client.steps import check_unique
from queueflow_client.types import WorkflowStep

__all__ = ["LocalJob", "LocalLease", "run_local", "run_local_async"]


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

    def __post_init__(self) -> None:
        if self.workflow_step_id is not None and self.workflow_id is None:
            object.__setattr__(self, "workflow_id", "wf_local")  # a step is always of some workflow


class LocalLease:
    """The lease of a local run: it always holds, and it records what the task reported through its `ctx`."""

    def __init__(self) -> None:
        self.job: LocalJob | None = None
        """The fake job of the run (set when it starts)."""
        self.progress_reports: list[Any] = []
        """Every `ctx.progress(value)`, in order."""
        self.added_steps: list[dict[str, Any]] = []
        """Every step `ctx.add_steps` added, in order, as the API would receive it (`name`, `task_name`,
        `payload`, `depends_on`, `required_by`, `wait`, …)."""

    async def heartbeat(self) -> bool:
        return True

    async def progress(self, value: Any) -> bool:
        self.progress_reports.append(json.loads(json.dumps(value, allow_nan=False)))
        return True

    async def add_steps(self, steps: list[dict[str, Any]]) -> list[WorkflowStep]:
        job = self.job
        if job is None or job.workflow_step_id is None:
            detail = "ctx.add_steps: this job is not a workflow step (run_local(..., workflow_step_id=...))"
            raise InvalidStateError(409, "invalid_state", detail)
        check_unique(steps)
        taken = {step["name"] for step in self.added_steps} & {step["name"] for step in steps}
        if taken:
            raise ValidationError(
                400, "validation_error", f"steps already added in this run: {', '.join(sorted(taken))}",
                tuple(FieldError("steps", f"{name!r} is taken") for name in sorted(taken)),
            )  # fmt: skip
        added = [json.loads(json.dumps(step, allow_nan=False)) for step in steps]
        self.added_steps.extend(added)
        return [
            WorkflowStep(
                name=step["name"],
                task_name=step.get("task_name"),
                status="pending",
                job_id=None,
                depends_on=list(step.get("depends_on", ())),
                on_failure=step.get("on_failure", "halt"),
                added_by=job.workflow_step_id,
            )
            for step in added
        ]


async def run_local_async(
    tasks: TaskRunner, task_name: str, payload: Any = None, *, lease: LocalLease | None = None, **job: Any
) -> Any:
    """Run the task `task_name` of `tasks` once on `payload`; `job` sets the fake job's other fields
    (`delivery_count=3`, `id=…`, `queue_name=…`, `workflow_step_id=…`, `deadline=…`); `lease` records what the
    task reported (progress, added steps)."""
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
    lease = lease if lease is not None else LocalLease()
    lease.job = delivery
    result = await invoke(function, dict(sent), JobContext(delivery, lease))
    try:
        json.dumps(result, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"the task's result is not JSON (a worker would dead-letter the job): {exc}") from exc
    return result


def run_local(
    tasks: TaskRunner, task_name: str, payload: Any = None, *, lease: LocalLease | None = None, **job: Any
) -> Any:
    """`run_local_async` from code that is not in an event loop (a plain test function)."""
    return asyncio.run(run_local_async(tasks, task_name, payload, lease=lease, **job))
