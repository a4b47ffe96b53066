/**
 * With `@opentelemetry/api` installed, the Worker runs each task in a span whose parent is the job's trace
 * context (the traceparent its enqueue sent); a thrown error is recorded on it. In-memory exporter, live server.
 */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { trace } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

import { QueueFlow, Worker } from "../src/index.js";
import { API_KEY, type LiveServer, WORKER_KEY, startServer } from "./live.js";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID = "00f067aa0ba902b7";
const exporter = new InMemorySpanExporter();
let server: LiveServer;
let client: QueueFlow;

before(async () => {
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  server = await startServer();
  client = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY });
});
after(async () => {
  await server.stop();
  trace.disable();
});

async function enqueueTraced(taskName: string, queue: string): Promise<string> {
  const { data, error } = await client.api.POST("/v1/jobs", {
    body: { task_name: taskName, queue_name: queue, max_retries: 0 },
    headers: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
  });
  assert.ok(data, JSON.stringify(error));
  assert.equal(data.trace_context?.traceparent, `00-${TRACE_ID}-${PARENT_ID}-01`);
  return data.id;
}

async function run(queue: string, taskName: string, handler: () => unknown): Promise<void> {
  const worker = new Worker({ baseUrl: server.url, workerKey: WORKER_KEY, queues: [queue], waitSeconds: 0.5 });
  worker.task(taskName, async () => handler());
  const running = worker.start();
  try {
    const id = await enqueueTraced(taskName, queue);
    await client.jobs.wait(id, { timeoutMs: 20_000 });
  } finally {
    await worker.stop();
    await running;
  }
}

test("a task runs in a child span of its job's trace context", async () => {
  await run("traced", "traced", () => "ok");
  const [span] = exporter.getFinishedSpans().filter((s) => s.name === "queueflow.task traced");
  assert.ok(span);
  assert.equal(span.spanContext().traceId, TRACE_ID);
  assert.equal(span.parentSpanContext?.spanId, PARENT_ID);
  assert.equal(span.attributes["queueflow.task_name"], "traced");
});

test("a task's error is recorded on its span", async () => {
  await run("traced-boom", "boom", () => {
    throw new Error("boom");
  });
  const [span] = exporter.getFinishedSpans().filter((s) => s.name === "queueflow.task boom");
  assert.ok(span);
  assert.equal(span.status.code, 2); // SpanStatusCode.ERROR
  assert.equal(span.events[0]?.name, "exception");
});
