"""One trace from the caller to the task, with OpenTelemetry's in-memory exporter: the SDK's enqueue carries the
caller's span, the server's request span (the `queueflow[otel]` middleware) is stored as the job's trace context,
the lease request's span links to it, and the Worker runs the task in a child span of it."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from litestar import Litestar
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from queueflow.api import create_app
from queueflow.clocks import TestClock
from queueflow.core.types import NewJob
from queueflow.engine import Engine
from queueflow.runtime.inprocess import InProcessWorker
from queueflow.stores.memory import InMemoryJobStore
from queueflow_client import AsyncQueueFlow, JobContext, TaskRegistry, Worker
from queueflow_client.local import LocalJob

from tests.inprocess import WatchedWakeups
from tests.sdk.conftest import BASE, SETTINGS

Spans = tuple[TracerProvider, InMemorySpanExporter]


@pytest.fixture
def spans() -> Spans:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@pytest.fixture
def app(store: InMemoryJobStore, clock: TestClock, wakeups: WatchedWakeups, spans: Spans) -> Litestar:
    return create_app(
        SETTINGS, store=store, clock=clock, wakeups=wakeups, rng=random.Random(7), tracer_provider=spans[0]
    )


@pytest.fixture
def sent() -> list[httpx.Request]:
    return []


@pytest.fixture
async def traced_client(app: Litestar, sent: list[httpx.Request]) -> AsyncIterator[AsyncQueueFlow]:
    async def record(response: httpx.Response) -> None:
        sent.append(response.request)

    async with (
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), event_hooks={"response": [record]}) as http,
        AsyncQueueFlow(BASE, "key-a", http_client=http, retry_delay=0) as client,
    ):
        yield client


def named(spans: list[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name.startswith(prefix)]


async def test_one_trace_links_the_enqueue_the_lease_and_the_task(
    app: Litestar, traced_client: AsyncQueueFlow, spans: Spans, sent: list[httpx.Request]
) -> None:
    provider, exporter = spans
    tasks = TaskRegistry(tracer_provider=provider)

    @tasks.task("traced")
    async def traced(payload: dict[str, Any], ctx: JobContext) -> str:
        with provider.get_tracer("app").start_as_current_span("inside the task"):
            return "ok"

    with provider.get_tracer("app").start_as_current_span("caller") as caller:
        job = await traced_client.jobs.enqueue("traced")
    assert job.trace_context is not None
    # The SDK sent the caller's span as the request's W3C traceparent.
    caller_context = caller.get_span_context()
    assert (
        sent[0].headers["traceparent"].startswith(f"00-{caller_context.trace_id:032x}-{caller_context.span_id:016x}-")
    )
    worker = Worker(BASE, "key-w", tasks, http_client=httpx.AsyncClient(transport=httpx.ASGITransport(app=app)))
    await worker.start()
    assert (await traced_client.jobs.wait(job.id, timeout=5)).result == "ok"
    await worker.stop()

    finished = list(exporter.get_finished_spans())
    trace_id = caller.get_span_context().trace_id
    # (In-process, the request runs in the caller's context, so the middleware makes it INTERNAL, not SERVER.)
    (enqueue,) = named(finished, "POST /v1/jobs")
    assert enqueue.context is not None
    assert enqueue.parent is not None
    assert enqueue.context.trace_id == trace_id
    assert enqueue.parent.span_id == caller.get_span_context().span_id
    # The job carries the server's request span: the task's span is its child.
    assert job.trace_context.traceparent.split("-")[2] == f"{enqueue.context.span_id:016x}"
    (task,) = named(finished, "queueflow.task traced")
    assert task.context is not None
    assert task.parent is not None
    assert (task.context.trace_id, task.parent.span_id) == (trace_id, enqueue.context.span_id)
    assert task.kind is SpanKind.CONSUMER
    assert task.attributes is not None
    assert task.attributes["queueflow.job_id"] == job.id
    (inside,) = named(finished, "inside the task")
    assert inside.parent is not None
    assert inside.parent.span_id == task.context.span_id
    # The lease request is the worker's own trace, linked to the job's.
    leases = [span for span in named(finished, "POST /v1/worker/lease") if span.kind is SpanKind.SERVER and span.links]
    (lease,) = leases
    (link,) = lease.links
    assert (link.context.trace_id, link.context.span_id) == (trace_id, enqueue.context.span_id)
    assert link.attributes is not None
    assert link.attributes["queueflow.job_id"] == job.id


async def test_a_failing_task_records_its_error_on_its_span(
    app: Litestar, traced_client: AsyncQueueFlow, spans: Spans
) -> None:
    provider, exporter = spans
    tasks = TaskRegistry(tracer_provider=provider)

    @tasks.task("boom")
    async def boom(payload: dict[str, Any], ctx: JobContext) -> None:
        raise RuntimeError("boom")

    worker = Worker(BASE, "key-w", tasks, http_client=httpx.AsyncClient(transport=httpx.ASGITransport(app=app)))
    await worker.start()
    job = await traced_client.jobs.run("boom", max_retries=0, timeout=5)
    await worker.stop()
    assert job.status == "dead_letter"
    (task,) = named(list(exporter.get_finished_spans()), "queueflow.task boom")
    assert task.status.status_code is StatusCode.ERROR
    assert [event.name for event in task.events] == ["exception"]


async def test_the_in_process_runner_traces_a_task_under_its_jobs_context(
    engine: Engine, wakeups: WatchedWakeups, spans: Spans
) -> None:
    provider, exporter = spans
    tasks, done = TaskRegistry(tracer_provider=provider), asyncio.Event()

    @tasks.task("local")
    async def local(payload: dict[str, Any], ctx: JobContext) -> None:
        done.set()

    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    async with InProcessWorker(engine, wakeups, tasks, queues=["default"], poll=60):
        await engine.enqueue("default", NewJob(task_name="local", trace_context={"traceparent": parent}))
        await asyncio.wait_for(done.wait(), 5)
    (task,) = named(list(exporter.get_finished_spans()), "queueflow.task local")
    assert task.context is not None
    assert task.parent is not None
    assert (f"{task.context.trace_id:032x}", f"{task.parent.span_id:016x}") == (parent[3:35], parent[36:52])


@dataclass(frozen=True)
class TracedJob(LocalJob):
    """A delivery as a worker gets it, with the trace context it was enqueued with."""

    trace_context: dict[str, str] | None = None


class HeldLease:
    async def heartbeat(self) -> bool:
        return True

    async def progress(self, value: Any) -> bool:
        return True


def current_span_registry(provider: Any = None) -> TaskRegistry:
    """A registry whose task `seen` answers the span context it runs in."""
    tasks = TaskRegistry(tracer_provider=provider)

    @tasks.task("seen")
    async def seen(payload: dict[str, Any], ctx: JobContext) -> Any:
        return trace.get_current_span().get_span_context()

    return tasks


async def run_seen(tasks: TaskRegistry, job: TracedJob) -> Any:
    function = tasks.function("seen")
    assert function is not None
    return await tasks.invoke(function, job, JobContext(job, HeldLease()))


async def test_without_a_tracer_provider_an_untraced_job_starts_no_span(monkeypatch: pytest.MonkeyPatch) -> None:
    # The global provider is OpenTelemetry's default proxy here (no test sets a global one): every span is a no-op.
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)

    def no_tracer(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a tracer was asked for a span that records nothing")

    monkeypatch.setattr(trace, "get_tracer", no_tracer)
    assert not (await run_seen(current_span_registry(), TracedJob("seen"))).is_valid


async def test_without_a_tracer_provider_a_task_still_runs_in_its_jobs_trace() -> None:
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    seen = await run_seen(current_span_registry(), TracedJob("seen", trace_context={"traceparent": parent}))
    assert (f"{seen.trace_id:032x}", f"{seen.span_id:016x}") == (parent[3:35], parent[36:52])


async def test_a_global_tracer_provider_set_after_the_registry_traces_untraced_jobs(
    monkeypatch: pytest.MonkeyPatch, spans: Spans
) -> None:
    provider, exporter = spans
    tasks = current_span_registry()  # made before the provider is set, as a worker's registry at import time is
    # What trace.set_tracer_provider does (allowed once a process, so not called here): the api's global is set.
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    seen = await run_seen(tasks, TracedJob("seen"))
    (task,) = named(list(exporter.get_finished_spans()), "queueflow.task seen")
    assert task.context is not None
    assert seen.span_id == task.context.span_id
