"""The task registry: task code by name, which both the remote `Worker` and the server's in-process runner
(`queueflow serve --tasks module:registry`) run through `queueflow_worker.WorkerLoop`.

    tasks = TaskRegistry()

    @tasks.task("send_email")
    async def send_email(payload: dict, ctx: JobContext) -> dict:   # a plain `def` runs in a thread
        ...
        return {"sent": True}

A task's return value completes the job (it must be JSON). An exception fails the delivery: the job retries
with backoff while its budget lasts, then dead-letters. Raise `Retry(after=seconds)` to choose the wait, or
`Fatal(message)` to dead-letter at once. What a running task sees of its job (`JobContext`: heartbeats, progress,
losing the lease) is `queueflow_worker.context`'s, shared with the server.

In a test, `tasks.run_local("send_email", {...})` runs a task once without a server (`queueflow_client.local`).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from queueflow_worker import outcomes
from queueflow_worker.context import Delivery, Fatal, JobContext, Lease, Retry, TaskFunction, invoke
from queueflow_worker.outcomes import Outcome

from queueflow_client.errors import error_from_problem
from queueflow_client.handles import Task, runnable
from queueflow_client.local import LocalLease, run_local, run_local_async

try:  # the optional `otel` extra: opentelemetry-api
    from opentelemetry import propagate as otel_propagate
    from opentelemetry import trace as otel_trace

    _NoProvider: tuple[type, ...] = (otel_trace.ProxyTracerProvider, otel_trace.NoOpTracerProvider)
    """The global providers whose spans record nothing: the default one (until an SDK's is set) and the no-op."""
except ImportError:  # pragma: no cover - exercised where the extra is not installed
    otel_propagate = None  # type: ignore[assignment]
    otel_trace = None  # type: ignore[assignment]
    _NoProvider = ()

_PROVIDER_BY_ENV = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
"""Whether opentelemetry-api is told by the environment which provider to load (read once: process configuration)."""
_UNKNOWN = object()

# Delivery, Fatal, JobContext, Lease, Retry and TaskFunction were defined here before queueflow_worker held them.
__all__ = ["Delivery", "Fatal", "JobContext", "Lease", "Retry", "TaskFunction", "TaskRegistry"]

outcomes.runner_code(__file__)  # the registry's frames (and its typed tasks' wrappers) start no stored traceback

P = TypeVar("P")
R = TypeVar("R")


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

        def register(function: Callable[[P, JobContext], R]) -> Task[P, R]:
            self.register(name, function)
            return Task(name, function)

        return register

    def register(self, name: str, function: Callable[[Any, JobContext], Any]) -> None:
        """Register `function` as the task `name` (a dataclass, Struct or model payload is converted for it)."""
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

    def refused(self, status: int, code: str | None, detail: str, errors: Sequence[tuple[str, str]]) -> Exception:
        """The error a task sees when the server's in-process runner refuses what it asked (`ctx.add_steps`): the
        class this SDK raises for the same problem over HTTP (`ValidationError`, `LeaseLostError`, …), so a task
        catches the same class wherever it runs (`queueflow_worker.ports.TaskRunner`)."""
        return error_from_problem(status, code, detail, errors)

    def function(self, name: str) -> TaskFunction | None:
        """The function registered as `name`, if any."""
        return self._tasks.get(name)

    def run_local(self, name: str, payload: Any = None, *, lease: LocalLease | None = None, **job: Any) -> Any:
        """Run the task `name` once, in-process and without a server, as a worker would (for tests): its result
        is returned, what it raises is raised; `lease` (a `LocalLease`) records its progress and added steps. See
        `queueflow_client.local`."""
        return run_local(self, name, payload, lease=lease, **job)

    async def run_local_async(
        self, name: str, payload: Any = None, *, lease: LocalLease | None = None, **job: Any
    ) -> Any:
        """`run_local` from inside an event loop (an async test)."""
        return await run_local_async(self, name, payload, lease=lease, **job)

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
    if not carrier and tracer_provider is None and _no_global_provider():
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


def _no_global_provider() -> bool:
    """Whether the global tracer provider records nothing. Asked per job, so a provider set later is used; read
    from where opentelemetry-api keeps it while none is set: `get_tracer_provider()` looks the environment up on
    every call until one is (`in os.environ`, 1.5% of the in-process runner's CPU per job). Through the public call
    when the environment names a provider, or when the api keeps it elsewhere (another version)."""
    if not _PROVIDER_BY_ENV and getattr(otel_trace, "_TRACER_PROVIDER", _UNKNOWN) is None:
        return True
    return type(otel_trace.get_tracer_provider()) in _NoProvider


def _carrier(context: Any) -> Mapping[str, str]:
    """A job's trace context as headers: the SDK's `TraceContext`, or the server's own job's dict."""
    if context is None:
        return {}
    if isinstance(context, Mapping):
        return context
    headers: Mapping[str, str] = context.headers()
    return headers
