"""Task code, and what a running task knows of its job: the same for the remote `Worker` and the server's
in-process runner (`queueflow serve --tasks module:registry`), which both run tasks through
`queueflow_client.loop.WorkerLoop`.

    tasks = TaskRegistry()

    @tasks.task("send_email")
    async def send_email(payload: dict, ctx: JobContext) -> dict:   # a plain `def` runs in a thread
        ...
        return {"sent": True}

A task's return value completes the job (it must be JSON). An exception fails the delivery: the job retries
with backoff while its budget lasts, then dead-letters. Raise `Retry(after=seconds)` to choose the wait, or
`Fatal(message)` to dead-letter at once. While a task runs its lease is heartbeated every `lease_seconds / 3`;
when a heartbeat finds the lease lost (the job was cancelled, or its lease expired and it was reclaimed) the
task is told: an async task is cancelled, a sync one sees `ctx.cancelled` become true. Whatever such a task
returns afterwards is dropped; the lease token it holds can no longer complete the job.

In a test, `tasks.run_local("send_email", {...})` runs a task once without a server (`queueflow_client.local`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from queueflow_client.handles import Task
    from queueflow_client.loop import Outcome

try:  # the optional `otel` extra: opentelemetry-api
    from opentelemetry import propagate as otel_propagate
    from opentelemetry import trace as otel_trace

    _NoProvider: tuple[type, ...] = (otel_trace.ProxyTracerProvider, otel_trace.NoOpTracerProvider)
    """The global providers whose spans record nothing: the default one (until an SDK's is set) and the no-op."""
except ImportError:  # pragma: no cover - exercised where the extra is not installed
    otel_propagate = None  # type: ignore[assignment]
    otel_trace = None  # type: ignore[assignment]
    _NoProvider = ()

__all__ = ["Delivery", "Fatal", "JobContext", "Lease", "Retry", "TaskFunction", "TaskRegistry"]

log = logging.getLogger("queueflow_client.worker")

TaskFunction = Callable[[dict[str, Any], "JobContext"], Any]
"""`(payload, ctx) -> result`, async or not."""
P = TypeVar("P")
R = TypeVar("R")


class Retry(Exception):
    """Raise from a task to fail this delivery and retry after `after` seconds (None: the job's backoff)."""

    def __init__(self, message: str = "retry requested", *, after: float | None = None) -> None:
        super().__init__(message)
        self.after = after


class Fatal(Exception):
    """Raise from a task to fail the job for good: it is dead-lettered without using its remaining retries."""


class Delivery(Protocol):
    """What a runner knows of the job it leased (a `types.LeasedJob` is one; so is the server's own job)."""

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


class TaskRegistry:
    """Task functions by name; a runner executes deliveries against it.

    With `opentelemetry-api` installed (`pip install 'queueflow-client[otel]'`), each delivery runs in a span
    `queueflow.task <task_name>` whose parent is the trace context the job was enqueued with (so it joins the
    enqueuing request's trace), on `tracer_provider` (default: the global one); an exception the task raises is
    recorded on it. Without it, nothing is traced."""

    def __init__(self, *, tracer_provider: Any = None) -> None:
        self._tasks: dict[str, TaskFunction] = {}
        self._coroutines: set[TaskFunction] = set()
        """The registered functions that are `async def` (asked once, not per job)."""
        self._tracer_provider = tracer_provider

    def task(self, name: str) -> Callable[[Callable[[P, JobContext], R]], Task[P, R]]:
        """Register the decorated function as the task `name`; it becomes a `Task` handle, still callable as the
        function, that also enqueues jobs with the function's payload type (`queueflow_client.handles`)."""
        from queueflow_client.handles import Task

        def register(function: Callable[[P, JobContext], R]) -> Task[P, R]:
            self.register(name, function)
            return Task(name, function)

        return register

    def register(self, name: str, function: Callable[[Any, JobContext], Any]) -> None:
        """Register `function` as the task `name` (a dataclass, Struct or model payload is converted for it)."""
        from queueflow_client.handles import runnable

        if name in self._tasks:
            raise ValueError(f"task {name!r} is already registered")
        task = self._tasks[name] = runnable(function)
        if inspect.iscoroutinefunction(task):
            self._coroutines.add(task)

    @property
    def names(self) -> list[str]:
        return sorted(self._tasks)

    def __contains__(self, name: object) -> bool:
        return name in self._tasks

    def recorded(self, outcome: Outcome, *, held: bool) -> None:
        """Called once the server answered an outcome: `held` is False when the lease was lost first. Does
        nothing; a subclass may keep a ledger."""

    def function(self, name: str) -> TaskFunction | None:
        """The function registered as `name`, if any."""
        return self._tasks.get(name)

    def run_local(self, name: str, payload: Any = None, **job: Any) -> Any:
        """Run the task `name` once, in-process and without a server, as a worker would (for tests): its result
        is returned, what it raises is raised. See `queueflow_client.local`."""
        from queueflow_client.local import run_local

        return run_local(self, name, payload, **job)

    async def run_local_async(self, name: str, payload: Any = None, **job: Any) -> Any:
        """`run_local` from inside an event loop (an async test)."""
        from queueflow_client.local import run_local_async

        return await run_local_async(self, name, payload, **job)

    async def invoke(self, function: TaskFunction, job: Delivery, ctx: JobContext) -> Any:
        """Run one delivery's function on its payload, inside the delivery's span when OpenTelemetry is
        installed (see the class docstring)."""
        coroutine = function in self._coroutines or None
        return await _traced(self._tracer_provider, job, invoke(function, dict(job.payload), ctx, coroutine))


async def _traced(tracer_provider: Any, job: Delivery, work: Awaitable[Any]) -> Any:
    """`work` inside the delivery's span, when OpenTelemetry is installed; as it is otherwise. The span is current
    in the task's own asyncio task (and, through `to_thread`'s copied context, in a sync task's thread)."""
    if otel_trace is None:
        return await work
    carrier = _carrier(getattr(job, "trace_context", None))
    if not carrier and tracer_provider is None and type(otel_trace.get_tracer_provider()) in _NoProvider:
        # No tracer provider is set and there is no trace to join: the span would be a no-op, and making it was
        # a sixth of the in-process runner's CPU per job. Checked per job, so a provider set later is used.
        return await work
    parent = otel_propagate.extract(carrier) if carrier else None
    tracer = otel_trace.get_tracer("queueflow_client", tracer_provider=tracer_provider)
    attributes: dict[str, str | int] = {
        "queueflow.job_id": job.id,
        "queueflow.task_name": job.task_name,
        "queueflow.queue": job.queue_name,
        "queueflow.delivery_count": job.delivery_count,
    }
    with tracer.start_as_current_span(
        f"queueflow.task {job.task_name}", context=parent, kind=otel_trace.SpanKind.CONSUMER, attributes=attributes
    ):
        return await work


def _carrier(context: Any) -> Mapping[str, str]:
    """A job's trace context as headers: the SDK's `TraceContext`, or the server's own job's dict."""
    if context is None:
        return {}
    if isinstance(context, Mapping):
        return context
    headers: Mapping[str, str] = context.headers()
    return headers


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
