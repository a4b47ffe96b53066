"""What a running task sees of its job, whoever leased it (the SDK's `Worker` over HTTP, the server's in-process
runner): its `JobContext`, made from the `Delivery` and the `Lease` the runner holds; `Retry` and `Fatal`, which a
task raises to choose its job's fate; and `invoke`, which calls a task as every runner does (an `async def` on
the loop, a plain `def` in a thread).

While a task runs its lease is heartbeated every `lease_seconds / 3`; when a heartbeat finds the lease lost (the
job was cancelled, or its lease expired and it was reclaimed) the task is told: an async task is cancelled, a
sync one sees `ctx.cancelled` become true. Whatever such a task returns afterwards is dropped.

A task running a workflow step may grow its workflow: `ctx.add_steps([...])` (`POST /v1/worker/jobs/{id}/steps`
over HTTP, the engine in-process) adds steps under the job's lease, atomically, and is safe to repeat after a crash.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

__all__ = ["AddedStep", "Delivery", "Fatal", "JobContext", "Lease", "Retry", "TaskFunction", "invoke", "step_json"]

TaskFunction = Callable[[dict[str, Any], "JobContext"], Any]
"""`(payload, ctx) -> result`, async or not."""


class Retry(Exception):
    """Raise from a task to fail this delivery and retry after `after` seconds (None: the job's backoff)."""

    def __init__(self, message: str = "retry requested", *, after: float | None = None) -> None:
        super().__init__(message)
        self.after = after


class Fatal(Exception):
    """Raise from a task to fail the job for good: it is dead-lettered without using its remaining retries."""


class Delivery(Protocol):
    """What a runner knows of the job it leased (the SDK's `LeasedJob` is one; so is the server's own `Job`)."""

    @property
    def id(self) -> str: ...
    @property
    def task_name(self) -> str: ...
    @property
    def queue_name(self) -> str: ...
    @property
    def payload(self) -> Mapping[str, Any]: ...
    @property
    def delivery_count(self) -> int: ...
    @property
    def workflow_id(self) -> str | None: ...
    @property
    def workflow_step_id(self) -> str | None: ...
    @property
    def deadline(self) -> datetime | None: ...


class AddedStep(Protocol):
    """A step of the workflow as `ctx.add_steps` answers it (the SDK's `WorkflowStep` is one; so is the server's
    own `Step`)."""

    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def job_id(self) -> str | None: ...
    @property
    def depends_on(self) -> Sequence[str]: ...
    @property
    def added_by(self) -> str | None: ...


def step_json(step: Any) -> dict[str, Any]:
    """A step to add as the API takes it (a `NewStep` of `POST /v1/worker/jobs/{id}/steps`): a step builder's
    `to_json()` (the SDK's `queueflow_client.steps`), or a mapping of the same fields (None values left out)."""
    if callable(to_json := getattr(step, "to_json", None)):
        data = to_json()
    elif isinstance(step, Mapping):
        data = {key: value for key, value in step.items() if value is not None}
    else:
        raise TypeError(f"a step to add is a step (steps.task, steps.signal, steps.sleep) or a dict, not {step!r:.80}")
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise TypeError(f"a step to add needs a name: {data!r:.80}")
    return data


class Lease(Protocol):
    """The held lease of one delivery, as its task sees it."""

    async def heartbeat(self) -> bool:
        """Extend the lease now; False when it no longer holds the job."""
        ...

    async def progress(self, value: Any) -> bool:
        """A heartbeat that also records `value` as the job's progress; False when it no longer holds the job."""
        ...

    async def add_steps(self, steps: list[dict[str, Any]]) -> Sequence[AddedStep]:
        """Add `steps` (`step_json`'s shape) to the job's workflow under this lease; the listed steps as they are
        now. Raises the source's errors: a lost lease, a job of no workflow, steps the server refuses."""
        ...


class JobContext:
    """What a running task knows about its job, and how it keeps or learns it lost its lease."""

    def __init__(self, job: Delivery, lease: Lease, *, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """`loop`: the running loop, when the caller has it at hand (looking it up costs a system call)."""
        self.job_id = job.id
        self.task_name = job.task_name
        self.queue = job.queue_name
        self.delivery_count = job.delivery_count
        """1 on the first delivery, 2 on the first retry, …"""
        self.workflow_id = job.workflow_id
        self.workflow_step_id = job.workflow_step_id
        self.deadline = job.deadline
        """When this delivery's `timeout_seconds` runs out (None: no timeout)."""
        self._lease = lease
        self._loop = loop or asyncio.get_running_loop()
        self._lost = False
        self._cancellation: threading.Event | None = None  # made on first use: most tasks never look

    @property
    def cancelled(self) -> bool:
        """True once the lease is lost: stop working, nothing this delivery does will be recorded."""
        return self._lost

    @property
    def cancellation(self) -> threading.Event:
        """Set when the lease is lost (cancelled or reclaimed): `ctx.cancellation.wait(timeout)` works in threads."""
        if self._cancellation is None:
            self._cancellation = threading.Event()
            if self._lost:
                self._cancellation.set()
        return self._cancellation

    def lose(self) -> None:
        """The lease is lost: `cancelled` becomes true and `cancellation` is set (for runners, not tasks)."""
        self._lost = True
        if self._cancellation is not None:
            self._cancellation.set()

    async def heartbeat(self) -> bool:
        """Extend the lease now (the runner also does so on its own); False, and `cancelled`, if it was lost."""
        if self.cancelled:
            return False
        if not await self._lease.heartbeat():
            self.lose()
        return not self.cancelled

    def heartbeat_blocking(self) -> bool:
        """`heartbeat()` for a sync task, from its thread."""
        return asyncio.run_coroutine_threadsafe(self.heartbeat(), self._loop).result()

    async def progress(self, value: Any) -> bool:
        """Report how far the task has come: `value` (any JSON, at most 64 KiB encoded) becomes the job's
        `progress`, replacing the last one, and the lease is extended as by `heartbeat`. False, and `cancelled`,
        if the lease was lost (then nothing is recorded). A value the server cannot store raises ValidationError."""
        if self.cancelled:
            return False
        if not await self._lease.progress(value):
            self.lose()
        return not self.cancelled

    def progress_blocking(self, value: Any) -> bool:
        """`progress(value)` for a sync task, from its thread."""
        return asyncio.run_coroutine_threadsafe(self.progress(value), self._loop).result()

    async def add_steps(self, steps: Sequence[Any]) -> list[AddedStep]:
        """Add `steps` to the workflow this job's step runs in (`queueflow_client.steps`: `steps.task(...,
        required_by=["reduce"])`, `steps.signal(...)`, …; or dicts of the API's fields), all or none; answers the
        listed steps as they are now (a new step whose dependencies are all done is already enqueued). Safe to repeat:
        a delivery run again after a crash that adds the same steps adds nothing twice. A job that is no workflow
        step, or a step past `pending` in `required_by`, is an InvalidStateError; a lost lease a LeaseLostError; a
        cycle, an unknown name, a name given twice a ValidationError (the SDK's classes, over HTTP)."""
        if isinstance(steps, str | Mapping) or not isinstance(steps, Sequence):
            raise TypeError("add_steps takes a list of steps")
        return list(await self._lease.add_steps([step_json(step) for step in steps]))

    def add_steps_blocking(self, steps: Sequence[Any]) -> list[AddedStep]:
        """`add_steps(steps)` for a sync task, from its thread."""
        return asyncio.run_coroutine_threadsafe(self.add_steps(steps), self._loop).result()


async def invoke(
    function: TaskFunction, payload: dict[str, Any], ctx: JobContext, coroutine: bool | None = None
) -> Any:
    """Call a task: an async one on the loop, a plain one in a thread. `coroutine`: True when `function` is known
    to be `async def` (None: look)."""
    if coroutine or inspect.iscoroutinefunction(function):
        return await function(payload, ctx)
    result = await asyncio.to_thread(function, payload, ctx)
    if inspect.isawaitable(result):  # a callable object whose __call__ is async
        return await result
    return result
