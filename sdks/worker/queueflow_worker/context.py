"""What a running task sees of its job, whoever leased it (the SDK's `Worker` over HTTP, the server's in-process
runner): its `JobContext`, made from the `Delivery` and the `Lease` the runner holds; `Retry` and `Fatal`, which a
task raises to choose its job's fate; and `invoke`, which calls a task as every runner does (an `async def` on
the loop, a plain `def` in a thread).

While a task runs its lease is heartbeated every `lease_seconds / 3`; when a heartbeat finds the lease lost (the
job was cancelled, or its lease expired and it was reclaimed) the task is told: an async task is cancelled, a
sync one sees `ctx.cancelled` become true. Whatever such a task returns afterwards is dropped.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

__all__ = ["Delivery", "Fatal", "JobContext", "Lease", "Retry", "TaskFunction", "invoke"]

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


class Lease(Protocol):
    """The held lease of one delivery, as its task sees it."""

    async def heartbeat(self) -> bool:
        """Extend the lease now; False when it no longer holds the job."""
        ...

    async def progress(self, value: Any) -> bool:
        """A heartbeat that also records `value` as the job's progress; False when it no longer holds the job."""
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
