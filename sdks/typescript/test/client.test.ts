import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";

import {
  APIError,
  AuthenticationError,
  ConnectionError,
  InvalidStateError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionDeniedError,
  QueueFlow,
  QueueFlowError,
  TimeoutError,
  UnavailableError,
  ValidationError,
  type Job,
} from "../src/index.js";
import { API_KEY, NOBODY_LISTENS, OTHER_API_KEY, type LiveServer, WORKER_KEY, startServer } from "./live.js";

let server: LiveServer;
let client: QueueFlow;

before(async () => {
  server = await startServer();
  client = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY });
});
after(() => server.stop());

describe("jobs", () => {
  test("enqueue answers the job with the server's defaults filled in", async () => {
    const job = await client.jobs.enqueue({ task_name: "send_email", payload: { to: "a@example.com" }, priority: 5 });
    assert.match(job.id, /^job_/);
    assert.equal(job.status, "pending");
    assert.equal(job.queue_name, "default");
    assert.equal(job.priority, 5);
    assert.deepEqual(job.payload, { to: "a@example.com" });
    assert.equal(job.tenant_id, "tenant-a");
  });

  test("enqueue with an idempotency key answers the original job on a repeat", async () => {
    const first = await client.jobs.enqueue({ task_name: "once" }, { idempotencyKey: "order-42" });
    const again = await client.jobs.enqueue({ task_name: "once", payload: { changed: true } }, { idempotencyKey: "order-42" });
    assert.equal(again.id, first.id);
    assert.deepEqual(again.payload, {});
    assert.equal(first.idempotency_key, "order-42");
  });

  test("enqueue without a key gets a fresh one per call, so two calls make two jobs", async () => {
    const a = await client.jobs.enqueue({ task_name: "twice" });
    const b = await client.jobs.enqueue({ task_name: "twice" });
    assert.notEqual(a.id, b.id);
    assert.match(a.idempotency_key ?? "", /^qf-client-/);
  });

  test("enqueueMany adds all jobs in order", async () => {
    const jobs = await client.jobs.enqueueMany([
      { task_name: "batch", payload: { n: 1 } },
      { task_name: "batch", payload: { n: 2 }, queue_name: "other" },
      { task_name: "batch", payload: { n: 3 }, idempotency_key: "batch-3" },
    ]);
    assert.deepEqual(
      jobs.map((job) => job.payload),
      [{ n: 1 }, { n: 2 }, { n: 3 }],
    );
    assert.equal(jobs[1]?.queue_name, "other");
    assert.equal(jobs[2]?.idempotency_key, "batch-3");
  });

  test("get answers the job; another tenant's job is not found", async () => {
    const job = await client.jobs.enqueue({ task_name: "mine" });
    assert.deepEqual((await client.jobs.get(job.id)).id, job.id);
    const other = new QueueFlow({ baseUrl: server.url, apiKey: OTHER_API_KEY });
    await assert.rejects(other.jobs.get(job.id), NotFoundError);
  });

  test("list filters and pages; iterate walks every page", async () => {
    const queue = "paging";
    for (let n = 0; n < 5; n++) await client.jobs.enqueue({ task_name: "page", queue_name: queue, metadata: { n, tag: "p" } });
    const first = await client.jobs.list({ queue_name: queue, limit: 2 });
    assert.equal(first.items.length, 2);
    assert.ok(first.next_cursor);
    const second = await client.jobs.list({ queue_name: queue, limit: 2, cursor: first.next_cursor });
    assert.equal(second.items.length, 2);
    assert.notEqual(second.items[0]?.id, first.items[0]?.id);

    const all: Job[] = [];
    for await (const job of client.jobs.iterate({ queue_name: queue, status: "pending", limit: 2 })) all.push(job);
    assert.equal(all.length, 5);
    assert.equal(new Set(all.map((job) => job.id)).size, 5);

    const matching = await client.jobs.list({ queue_name: queue, metadata: { n: 3 } });
    assert.deepEqual(
      matching.items.map((job) => job.metadata.n),
      [3],
    );
  });

  test("cancel a pending job; cancelling it again is an invalid state", async () => {
    const job = await client.jobs.enqueue({ task_name: "doomed" });
    assert.equal((await client.jobs.cancel(job.id)).status, "cancelled");
    const error = await client.jobs.cancel(job.id).catch((e: unknown) => e);
    assert.ok(error instanceof InvalidStateError);
    assert.equal(error.status, 409);
    assert.equal(error.code, "invalid_state");
  });

  test("retry puts a cancelled job back to pending; retrying a pending one is an invalid state", async () => {
    const job = await client.jobs.enqueue({ task_name: "again" });
    await client.jobs.cancel(job.id);
    const retried = await client.jobs.retry(job.id);
    assert.equal(retried.status, "pending");
    assert.equal(retried.retry_count, 0);
    await assert.rejects(client.jobs.retry(job.id), InvalidStateError);
  });
});

describe("queues", () => {
  test("list counts jobs by state", async () => {
    await client.jobs.enqueue({ task_name: "count", queue_name: "counted" });
    await client.jobs.enqueue({ task_name: "count", queue_name: "counted", delay_seconds: 3600 });
    const queues = await client.queues.list();
    const counted = queues.find((queue) => queue.name === "counted");
    assert.ok(counted);
    assert.equal(counted.pending, 1);
    assert.equal(counted.scheduled, 1);
    assert.equal(counted.paused, false);
    assert.equal(counted.concurrency_limit, null);
  });

  test("get and update the flow-control settings", async () => {
    await assert.rejects(client.queues.get("ts-exports"), NotFoundError);
    let queue = await client.queues.update("ts-exports", { concurrency_limit: 2, rate_limit: { jobs: 10, per_seconds: 1.5 } });
    assert.equal(queue.concurrency_limit, 2);
    assert.deepEqual(queue.rate_limit, { jobs: 10, per_seconds: 1.5 });
    assert.equal((await client.queues.pause("ts-exports")).paused, true);
    queue = await client.queues.update("ts-exports", { concurrency_limit: null, key_concurrency_limit: 1 });
    assert.deepEqual([queue.paused, queue.concurrency_limit, queue.key_concurrency_limit], [true, null, 1]);
    assert.equal((await client.queues.resume("ts-exports")).paused, false);
    assert.equal((await client.queues.get("ts-exports")).rate_limit?.jobs, 10);
    await assert.rejects(client.queues.update("ts-exports", { concurrency_limit: 0 }), ValidationError);
  });

  test("concurrency_key on enqueue, with one job per key at a time", async () => {
    const job = await client.jobs.enqueue({ task_name: "export", queue_name: "ts-keyed", concurrency_key: "user-1" });
    assert.equal(job.concurrency_key, "user-1");
    const queue = await client.queues.update("ts-keyed", { key_concurrency_limit: 1 });
    assert.equal(queue.key_concurrency_limit, 1);
  });
});

describe("errors", () => {
  test("a validation error names the fields", async () => {
    const error = await client.jobs.enqueue({ task_name: "bad", priority: 5000 }).catch((e: unknown) => e);
    assert.ok(error instanceof ValidationError);
    assert.ok(error instanceof APIError);
    assert.ok(error instanceof QueueFlowError);
    assert.equal(error.status, 400);
    assert.equal(error.code, "validation_error");
    assert.ok(error.errors.some((field) => field.field.includes("priority")), JSON.stringify(error.errors));
  });

  test("an unknown key is an authentication error", async () => {
    const stranger = new QueueFlow({ baseUrl: server.url, apiKey: "nope" });
    const error = await stranger.queues.list().catch((e: unknown) => e);
    assert.ok(error instanceof AuthenticationError);
    assert.equal(error.code, "unauthorized");
  });

  test("a worker key on a tenant route is a permission error", async () => {
    const worker = new QueueFlow({ baseUrl: server.url, apiKey: WORKER_KEY });
    await assert.rejects(worker.jobs.list(), PermissionDeniedError);
  });

  test("an unknown job is not found", async () => {
    const error = await client.jobs.get("job_00000000000000000000000000").catch((e: unknown) => e);
    assert.ok(error instanceof NotFoundError);
    assert.equal(error.status, 404);
  });

  test("a body over the size limit is too large", async () => {
    const big = "x".repeat(4_300_000); // the default limit is 4 MiB
    const error = await client.jobs.enqueue({ task_name: "big", payload: { big } }).catch((e: unknown) => e);
    assert.ok(error instanceof PayloadTooLargeError);
    assert.match(error.message, /over this server's limit of 4,194,304 bytes \(QUEUEFLOW_MAX_BODY_BYTES\)/);
  });

  test("nobody listening is a connection error", async () => {
    const port = NOBODY_LISTENS;
    const nowhere = new QueueFlow({ baseUrl: `http://127.0.0.1:${port}`, maxRetries: 0 });
    const error = await nowhere.queues.list().catch((e: unknown) => e);
    assert.ok(error instanceof ConnectionError);
    assert.ok(!(error instanceof TimeoutError));
  });

  test("no answer within timeoutMs is a timeout error", async () => {
    const silent = createServer(() => {
      // never answers
    });
    silent.listen(0, "127.0.0.1");
    await once(silent, "listening");
    try {
      const address = silent.address();
      assert.ok(address && typeof address === "object");
      const slow = new QueueFlow({ baseUrl: `http://127.0.0.1:${address.port}`, timeoutMs: 100, maxRetries: 0 });
      const error = await slow.jobs.get("job_x").catch((e: unknown) => e);
      assert.ok(error instanceof TimeoutError);
      assert.ok(error instanceof ConnectionError);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  test("a caller's abort signal rejects with its reason and is not retried", async () => {
    const controller = new AbortController();
    controller.abort(new Error("caller gave up"));
    await assert.rejects(client.jobs.get("job_x", { signal: controller.signal }), /caller gave up/);
  });
});

describe("retries", () => {
  /** A fetch that answers 503 `failures` times, then passes through; it records every request. */
  function flaky(failures: number) {
    const seen: Request[] = [];
    const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const request = new Request(input, init);
      seen.push(request.clone());
      if (seen.length <= failures) {
        const problem = { type: "about:blank", title: "Service Unavailable", status: 503, detail: "db down", code: "unavailable" };
        return new Response(JSON.stringify(problem), {
          status: 503,
          headers: { "Content-Type": "application/problem+json", "Retry-After": "0" },
        });
      }
      return globalThis.fetch(request);
    };
    return { seen, fetch };
  }

  test("a GET is repeated after a 503 and succeeds", async () => {
    const { seen, fetch } = flaky(2);
    const retrying = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY, maxRetries: 2, fetch });
    assert.ok(Array.isArray(await retrying.queues.list()));
    assert.equal(seen.length, 3);
  });

  test("past maxRetries the 503 surfaces as an UnavailableError", async () => {
    const { seen, fetch } = flaky(5);
    const retrying = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY, maxRetries: 1, fetch });
    const error = await retrying.queues.list().catch((e: unknown) => e);
    assert.ok(error instanceof UnavailableError);
    assert.equal(error.detail, "db down");
    assert.equal(seen.length, 2);
  });

  test("enqueue is repeated with the same idempotency key, so it adds one job", async () => {
    const { seen, fetch } = flaky(1);
    const retrying = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY, fetch });
    const job = await retrying.jobs.enqueue({ task_name: "retried", queue_name: "retried" });
    assert.equal(seen.length, 2);
    const keys = seen.map((request) => request.headers.get("Idempotency-Key"));
    assert.equal(keys[0], keys[1]);
    assert.equal(job.idempotency_key, keys[0]);
    assert.equal((await client.jobs.list({ queue_name: "retried" })).items.length, 1);
  });

  test("cancel is not safe to repeat: a 503 surfaces at once", async () => {
    const { seen, fetch } = flaky(1);
    const retrying = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY, fetch });
    await assert.rejects(retrying.jobs.cancel("job_x"), UnavailableError);
    assert.equal(seen.length, 1);
  });

  test("workflows.create is repeated with the same idempotency key, so it starts one workflow", async () => {
    const { seen, fetch } = flaky(1);
    const retrying = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY, fetch });
    const workflow = await retrying.workflows.create({ name: "retried", steps: [{ name: "only", task_name: "t", queue_name: "retried-wf" }] });
    assert.equal(seen.length, 2);
    const keys = seen.map((request) => request.headers.get("Idempotency-Key"));
    assert.ok(keys[0]);
    assert.equal(keys[0], keys[1]);
    const named = (await client.workflows.list()).items.filter((item) => item.name === "retried");
    assert.deepEqual(
      named.map((item) => item.id),
      [workflow.id],
    );
  });

  test("schedules.create and schedules.delete are not repeated; schedules.update is", async () => {
    const once = flaky(1);
    const createOnce = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY, fetch: once.fetch });
    await assert.rejects(createOnce.schedules.create({ name: "retried", cron: "@daily", task_name: "t" }), UnavailableError);
    assert.equal(once.seen.length, 1);

    await client.schedules.create({ name: "retried", cron: "@daily", task_name: "t" });
    const patch = flaky(1);
    const updating = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY, fetch: patch.fetch });
    assert.equal((await updating.schedules.update("retried", { priority: 5 })).priority, 5);
    assert.equal(patch.seen.length, 2);

    const remove = flaky(1);
    const deleting = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY, fetch: remove.fetch });
    await assert.rejects(deleting.schedules.delete("retried"), UnavailableError);
    assert.equal(remove.seen.length, 1);
    assert.equal((await client.schedules.get("retried")).priority, 5);
  });

  test("a connection error on a GET is retried", async () => {
    let calls = 0;
    const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      calls += 1;
      if (calls === 1) throw new TypeError("fetch failed", { cause: { code: "ECONNRESET" } });
      return globalThis.fetch(input, init);
    };
    const retrying = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY, fetch });
    await retrying.queues.list();
    assert.equal(calls, 2);
  });
});
