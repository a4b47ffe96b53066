/**
 * What every request says about its sender: `User-Agent: queueflow-ts/<version>` (the package's version, which
 * `make release` keeps equal to the server's and the Python SDK's), and, inside an OpenTelemetry span, the span's
 * `traceparent` — on the typed client's routes (fetch) and on the worker routes (`node:http` keep-alive) alike.
 * The requests go to a local server that only records their headers.
 */

import assert from "node:assert/strict";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { type IncomingHttpHeaders, type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";

import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";

import { QueueFlow, VERSION } from "../src/index.js";
import { Transport } from "../src/transport.js";

const seen: IncomingHttpHeaders[] = [];
let recorder: Server;
let baseUrl: string;

before(async () => {
  recorder = createServer((request, response) => {
    seen.push(request.headers);
    request.resume();
    response.writeHead(200, { "Content-Type": "application/json" });
    response.end(request.url === "/v1/worker/lease" ? '{"jobs": []}' : '{"items": [], "next_cursor": null}');
  });
  recorder.listen(0, "127.0.0.1");
  await once(recorder, "listening");
  baseUrl = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(new BasicTracerProvider());
});
after(() => {
  recorder.close();
  trace.disable();
  propagation.disable();
  context.disable();
});

/** The headers of the one request `call` makes. */
async function headersOf(call: () => Promise<unknown>): Promise<IncomingHttpHeaders> {
  seen.length = 0;
  await call();
  assert.equal(seen.length, 1);
  return seen[0] as IncomingHttpHeaders;
}

test("VERSION is the package's version", () => {
  const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  assert.equal(VERSION, manifest.version);
});

test("every request says which SDK sent it, on both transports", async () => {
  const client = new QueueFlow({ baseUrl, apiKey: "k" });
  const listed = await headersOf(() => client.jobs.list());
  assert.equal(listed["user-agent"], `queueflow-ts/${VERSION}`);
  const transport = new Transport({ baseUrl, token: "w" });
  try {
    const leased = await headersOf(() => transport.post("/v1/worker/lease", { queues: ["q"] }, { safe: true }));
    assert.equal(leased["user-agent"], `queueflow-ts/${VERSION}`);
  } finally {
    transport.close();
  }
});

test("inside a span, a request carries the span's traceparent; outside, none", async () => {
  const client = new QueueFlow({ baseUrl, apiKey: "k" });
  const transport = new Transport({ baseUrl, token: "w" });
  try {
    assert.equal((await headersOf(() => client.jobs.list())).traceparent, undefined);
    await trace.getTracer("test").startActiveSpan("enqueue", async (span) => {
      const { traceId, spanId } = span.spanContext();
      const listed = await headersOf(() => client.jobs.list());
      assert.equal(listed.traceparent, `00-${traceId}-${spanId}-01`);
      const leased = await headersOf(() => transport.post("/v1/worker/lease", { queues: ["q"] }, { safe: true }));
      assert.equal(leased.traceparent, `00-${traceId}-${spanId}-01`);
      span.end();
    });
  } finally {
    transport.close();
  }
});
