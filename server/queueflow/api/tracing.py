"""Trace context at the edge: the W3C headers an enqueue reads, and the OpenTelemetry request spans of the
`queueflow[otel]` extra.

The trace context stored with a job is the request's own span when the server traces (`otel_middleware`), so
the task's span is a grandchild of the caller's and the enqueue request sits between them; otherwise it is the
caller's `traceparent`/`tracestate` as sent. OpenTelemetry is optional: without it none of this imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from litestar.params import HeaderParameter

from queueflow.core.tracecontext import trace_context
from queueflow.core.types import Job

try:  # the `queueflow[otel]` extra
    from opentelemetry import trace as otel_trace
except ImportError:  # pragma: no cover - exercised where the extra is not installed
    otel_trace = None  # type: ignore[assignment]

TraceparentHeader = Annotated[
    str | None,
    HeaderParameter(
        name="traceparent",
        description="W3C Trace Context: stored with the job (a workflow's step jobs inherit it), returned on lease, "
        "and the parent of the worker's task span. One that does not parse is ignored.",
    ),
]
TracestateHeader = Annotated[
    str | None,
    HeaderParameter(name="tracestate", description="W3C Trace Context vendor data, kept with a valid traceparent."),
]


def request_trace_context(traceparent: str | None, tracestate: str | None) -> dict[str, str] | None:
    """What an enqueue stores: the current request span's context if the server traces, else the headers'."""
    if otel_trace is not None:
        span = otel_trace.get_current_span()
        context = span.get_span_context()
        if context.is_valid and span.is_recording():
            own = {"traceparent": f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"}
            state = context.trace_state.to_header() if context.trace_state else ""
            if state:
                own["tracestate"] = state
            return own
    return trace_context(traceparent, tracestate)


def otel_middleware(app: Any, tracer_provider: Any) -> Any:
    """The ASGI app wrapped in OpenTelemetry's ASGI middleware: a server span per request, whose parent is the
    request's traceparent."""
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    return OpenTelemetryMiddleware(app, exclude_spans=["receive", "send"], tracer_provider=tracer_provider)


def link_leased(jobs: Sequence[Job]) -> None:
    """Link the current lease request's span to each leased job's trace context (when the server traces), so a
    trace viewer leads from a job's enqueue to the lease that handed it to a worker."""
    if otel_trace is None:
        return
    span = otel_trace.get_current_span()
    if not span.is_recording():
        return
    for job in jobs:
        context = _span_context(job.trace_context)
        if context is not None:
            span.add_link(context, {"queueflow.job_id": job.id})


def _span_context(stored: dict[str, str] | None) -> Any:
    if stored is None or otel_trace is None:
        return None
    _version, trace_id, span_id, flags = stored["traceparent"].split("-")[:4]
    return otel_trace.SpanContext(
        int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=otel_trace.TraceFlags(int(flags, 16))
    )
