/**
 * The worker's routes without a `fetch` option: over `node:http` on a keep-alive agent (src/keepalive.ts), with
 * the errors, retries and timeouts of every other call. The fake servers here answer what a test needs.
 */

import assert from "node:assert/strict";
import { once } from "node:events";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import { after, before, describe, test } from "node:test";

import {
  APIError,
  AuthenticationError,
  ConnectionError,
  LeaseLostError,
  QueueFlow,
  TimeoutError,
  UnavailableError,
  Worker,
} from "../src/index.js";
import { Transport } from "../src/transport.js";
import { API_KEY, type LiveServer, NOBODY_LISTENS, WORKER_KEY, deferred, startServer } from "./live.js";

let server: LiveServer;

before(async () => {
  server = await startServer();
});
after(() => server.stop());

test("a worker without a fetch option leases, runs and acks without the global fetch", async () => {
  const client = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY });
  const job = await client.jobs.enqueue({ task_name: "plain", queue_name: "ka-plain", payload: { n: 2 } });
  const seen: string[] = [];
  const original = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    seen.push(input instanceof Request ? input.url : String(input));
    return original(input, init);
  };
  const ran = deferred<number>();
  try {
    const w = new Worker({ baseUrl: server.url, workerKey: WORKER_KEY, queues: ["ka-plain"], waitSeconds: 0.5 });
    w.task<{ n: number }>("plain", (payload) => {
      ran.resolve(payload.n);
      return { doubled: payload.n * 2 };
    });
    w.start();
    assert.equal(await ran.promise, 2);
    await w.stop(); // sends the outcome before it resolves
  } finally {
    globalThis.fetch = original;
  }
  assert.deepEqual(seen, []);
  const done = await client.jobs.get(job.id);
  assert.equal(done.status, "completed");
  assert.deepEqual(done.result, { doubled: 4 });
});

test("a refused key stops a worker without a fetch option too, with the AuthenticationError", async () => {
  const w = new Worker({ baseUrl: server.url, workerKey: "no-such-key", queues: ["ka-refused"], logger: quiet, onError: () => {} });
  w.task("t", () => null);
  await assert.rejects(w.start(), AuthenticationError);
});

describe("Transport.post over node:http", () => {
  let fake: Server;
  let url: string;
  let answer: (request: IncomingMessage, body: string, response: ServerResponse) => void;
  const requests: { path: string; body: string; headers: IncomingMessage["headers"] }[] = [];
  let connections = 0;

  before(async () => {
    fake = createServer((request, response) => {
      let body = "";
      request.setEncoding("utf8");
      request.on("data", (chunk: string) => (body += chunk));
      request.on("end", () => {
        requests.push({ path: request.url ?? "", body, headers: request.headers });
        answer(request, body, response);
      });
    });
    fake.on("connection", () => (connections += 1));
    fake.listen(0, "127.0.0.1");
    await once(fake, "listening");
    const address = fake.address();
    assert.ok(address && typeof address === "object");
    url = `http://127.0.0.1:${address.port}`;
  });
  after(() => {
    fake.closeAllConnections();
    fake.close();
  });

  function reset(answering: typeof answer): void {
    requests.length = 0;
    connections = 0;
    answer = answering;
  }

  const json = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    response.writeHead(status, { "Content-Type": "application/json", ...headers }).end(JSON.stringify(body));
  };

  test("sends the JSON body with the key, under the base URL's path, and answers the parsed JSON", async () => {
    reset((_request, _body, response) => json(response, 200, { results: [] }));
    const transport = new Transport({ baseUrl: `${url}/queueflow/`, token: "k" });
    const answered = await transport.post("/v1/worker/heartbeat", { jobs: [{ id: "job_1", lease_token: "t" }], lease_seconds: 30 }, { safe: true });
    assert.deepEqual(answered, { results: [] });
    assert.equal(requests[0]?.path, "/queueflow/v1/worker/heartbeat");
    assert.deepEqual(JSON.parse(requests[0]?.body ?? ""), { jobs: [{ id: "job_1", lease_token: "t" }], lease_seconds: 30 });
    assert.equal(requests[0]?.headers.authorization, "Bearer k");
    assert.equal(requests[0]?.headers["content-type"], "application/json");
    transport.close();
  });

  test("one connection carries call after call", async () => {
    reset((_request, _body, response) => json(response, 200, { results: [] }));
    const transport = new Transport({ baseUrl: url });
    for (let i = 0; i < 5; i++) await transport.post("/v1/worker/heartbeat", { jobs: [], lease_seconds: 30 }, { safe: true });
    assert.equal(requests.length, 5);
    assert.equal(connections, 1);
    transport.close();
  });

  test("a problem becomes its error class, with code, detail and headers", async () => {
    reset((_request, _body, response) => json(response, 409, { status: 409, code: "lease_lost", detail: "gone" }, { "X-Trace": "abc" }));
    const transport = new Transport({ baseUrl: url });
    const error = await transport.post("/v1/worker/ack", { complete: [], fail: [] }, { safe: true }).catch((e: unknown) => e);
    assert.ok(error instanceof LeaseLostError);
    assert.equal(error.status, 409);
    assert.equal(error.code, "lease_lost");
    assert.equal(error.detail, "gone");
    assert.equal(error.headers.get("x-trace"), "abc");
    assert.equal(requests.length, 1); // a 409 is not retried
    transport.close();
  });

  test("an answer that is not JSON is an APIError whose detail is the text", async () => {
    reset((_request, _body, response) => response.writeHead(502, { "Content-Type": "text/html" }).end("<h1>bad gateway</h1>"));
    const transport = new Transport({ baseUrl: url, maxRetries: 0 });
    const error = await transport.post("/v1/worker/ack", { complete: [], fail: [] }, { safe: true }).catch((e: unknown) => e);
    assert.ok(error instanceof APIError);
    assert.equal(error.status, 502);
    assert.equal(error.detail, "<h1>bad gateway</h1>");
  });

  test("a safe call is repeated after a 503 (per Retry-After); an unsafe one is not", async () => {
    let failures = 2;
    reset((_request, _body, response) => {
      if (failures-- > 0) json(response, 503, { status: 503, code: "unavailable", detail: "busy" }, { "Retry-After": "0" });
      else json(response, 200, { results: [] });
    });
    const transport = new Transport({ baseUrl: url, maxRetries: 2 });
    assert.deepEqual(await transport.post("/v1/worker/heartbeat", { jobs: [], lease_seconds: 30 }, { safe: true }), { results: [] });
    assert.equal(requests.length, 3);

    failures = 1;
    requests.length = 0;
    const lease = { queues: ["q"], max_jobs: 1, lease_seconds: 30, wait_seconds: 0, worker_id: "w", task_names: ["t"] };
    await assert.rejects(transport.post("/v1/worker/lease", lease, { safe: false }), UnavailableError);
    assert.equal(requests.length, 1);
    transport.close();
  });

  test("no answer within timeoutMs is a TimeoutError", async () => {
    reset(() => {
      // never answers
    });
    const transport = new Transport({ baseUrl: url, timeoutMs: 100, maxRetries: 0 });
    const error = await transport.post("/v1/worker/ack", { complete: [], fail: [] }, { safe: true }).catch((e: unknown) => e);
    assert.ok(error instanceof TimeoutError);
    assert.match(error.message, /within 100 ms/);
    fake.closeAllConnections();
  });

  test("the caller's signal ends the call with its reason", async () => {
    const arrived = deferred();
    reset(() => arrived.resolve());
    const transport = new Transport({ baseUrl: url });
    const stop = new AbortController();
    const call = transport.post("/v1/worker/ack", { complete: [], fail: [] }, { safe: true, signal: stop.signal });
    await arrived.promise;
    const reason = new Error("stopping");
    stop.abort(reason);
    await assert.rejects(call, (error) => error === reason);
    fake.closeAllConnections();
  });

  test("nobody listening is a ConnectionError naming the method and URL", async () => {
    const port = NOBODY_LISTENS;
    const transport = new Transport({ baseUrl: `http://127.0.0.1:${port}`, maxRetries: 0 });
    const error = await transport.post("/v1/worker/ack", { complete: [], fail: [] }, { safe: true }).catch((e: unknown) => e);
    assert.ok(error instanceof ConnectionError);
    assert.ok(!(error instanceof TimeoutError));
    assert.match(error.message, new RegExp(`POST http://127\\.0\\.0\\.1:${port}/v1/worker/ack: ECONNREFUSED`));
  });
});

const quiet = { info() {}, warn() {}, error() {} };
