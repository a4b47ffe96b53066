/**
 * OpenTelemetry, when installed: each task runs in a span whose parent is its job's trace context.
 *
 * `@opentelemetry/api` is an optional peer dependency: loaded once, by name at run time, so that this package
 * neither needs it nor exposes its types. What is used of it is declared here.
 */

import type { LeasedJob } from "./types.js";

interface OtelSpan {
  recordException(exception: unknown): void;
  setStatus(status: { code: number; message?: string }): void;
  end(): void;
}
interface OtelApi {
  ProxyTracerProvider: new () => { getDelegate(): unknown };
  trace: {
    getTracerProvider(): unknown;
    getTracer(name: string, version?: string): {
      startActiveSpan<T>(name: string, options: object, context: unknown, run: (span: OtelSpan) => T): T;
    };
    setSpanContext(context: unknown, spanContext: object): unknown;
  };
  context: { active(): unknown; with<T>(context: unknown, run: () => T): T };
  propagation: { inject(context: unknown, carrier: Record<string, string>): void };
  SpanKind: { CONSUMER: number };
  SpanStatusCode: { ERROR: number };
}

const OTEL_MODULE = "@opentelemetry/api";
let otel: Promise<OtelApi | null> | undefined;
/** The module once loaded (null: not installed); undefined until then. */
let otelApi: OtelApi | null | undefined;

export function loadOtel(): Promise<OtelApi | null> {
  otel ??= import(OTEL_MODULE).then(
    (module: OtelApi) => (otelApi = module),
    () => (otelApi = null),
  );
  return otel;
}

/**
 * The caller's trace context as request headers (`traceparent`, `tracestate`), as the Python SDK sends them: a job
 * enqueued inside a span carries that span's context, and its task's span continues the trace. Empty when
 * `@opentelemetry/api` is not installed, when no propagator is registered (the API's default injects nothing), and
 * until the module has loaded (every client starts loading it when it is made).
 */
export function traceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  if (otelApi) otelApi.propagation.inject(otelApi.context.active(), carrier);
  return carrier;
}

let noopProvider: unknown;

/** Whether a tracer provider is registered: the global one is a proxy, whose delegate is then not the no-op one. */
function recording(api: OtelApi): boolean {
  noopProvider ??= new api.ProxyTracerProvider().getDelegate();
  const provider = api.trace.getTracerProvider();
  return !(provider instanceof api.ProxyTracerProvider) || provider.getDelegate() !== noopProvider;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})/;

/**
 * Run a task in a span `queueflow.task <name>` whose parent is the job's trace context (that of the request that
 * enqueued it), when `@opentelemetry/api` is installed; a thrown error is recorded on the span.
 *
 * Once the module is loaded (or known absent) and no span is made, `run` is called directly and what it returns
 * or throws is the caller's: no promise of its own per job, nor one to wait for the module again.
 */
export function traced(job: LeasedJob, run: () => unknown): unknown {
  if (otelApi === undefined) return loadOtel().then(() => traced(job, run));
  const api = otelApi;
  if (!api) return run();
  let parent = api.context.active();
  const match = job.trace_context ? TRACEPARENT.exec(job.trace_context.traceparent) : null;
  if (match) {
    parent = api.trace.setSpanContext(parent, {
      traceId: match[2],
      spanId: match[3],
      traceFlags: Number.parseInt(match[4] ?? "0", 16),
      isRemote: true,
    });
  }
  // No tracer provider registered (the API installed, as a dependency of something, but no SDK): no span could be
  // recorded, so none is made — its contexts, attributes and closures were a quarter of a no-op job's garbage.
  // The job's trace context is still the handler's, for a propagator of its own.
  if (!recording(api)) return match ? api.context.with(parent, run) : run();
  const options = {
    kind: api.SpanKind.CONSUMER,
    attributes: {
      "queueflow.job_id": job.id,
      "queueflow.task_name": job.task_name,
      "queueflow.queue": job.queue_name,
      "queueflow.delivery_count": job.delivery_count,
    },
  };
  return api.trace.getTracer("@queueflow/client").startActiveSpan(`queueflow.task ${job.task_name}`, options, parent, async (span) => {
    try {
      return await run();
    } catch (error) {
      span.recordException(error);
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      throw error;
    } finally {
      span.end();
    }
  });
}
