/**
 * The Worker against a live server: leases and acks end to end and their wire format (outcomes, retries,
 * dead letters, task names, refused keys, cancels, heartbeats, an aborted long-poll), process signals, and a busy
 * drain. The loop's own behaviour (slots, prefetch, ack batching, heartbeats, draining) is tested in loop.test.ts
 * over a scripted source.
 */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import {
  AuthenticationError,
  defineTask,
  FatalError,
  type Job,
  LeaseLostError,
  PermissionDeniedError,
  QueueFlow,
  RetryError,
  Worker,
  type WorkerOptions,
} from "../src/index.js";
import { Lines } from "./fakes.js";
import { API_KEY, type LiveServer, WORKER_KEY, deferred, startServer, waitFor } from "./live.js";

// Node prints a warning (e.g. MaxListenersExceededWarning for listeners leaking onto one AbortSignal) through
// this event: the last test fails if any was emitted while the workers ran.
const warnings: Error[] = [];
process.on("warning", (warning) => warnings.push(warning));

let server: LiveServer;
let client: QueueFlow;
const fastRetry = { strategy: "fixed", base_seconds: 0.001, jitter: false } as const;

before(async () => {
  server = await startServer();
  client = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY });
});
after(() => server.stop());

/** A worker on its own queue (so tests never take each other's jobs), stopped by the test's end. */
function worker(queue: string, options: Partial<WorkerOptions> = {}): Worker {
  return new Worker({
    baseUrl: server.url,
    workerKey: WORKER_KEY,
    queues: [queue],
    waitSeconds: 0.5,
    heartbeatSeconds: 0.1,
    onError: (error) => assert.fail(`unexpected worker error: ${String(error)}`),
    logger: new Lines(),
    ...options,
  });
}

function settled(jobId: string, ...statuses: Job["status"][]): Promise<Job> {
  return waitFor(
    () => client.jobs.get(jobId),
    (job) => statuses.includes(job.status),
  );
}

test("a handler's return value completes the job", async () => {
  const w = worker("w-complete").task<{ to: string }>("send_email", async (payload, ctx) => ({
    sent: payload.to,
    delivery: ctx.job.delivery_count,
  }));
  w.start();
  try {
    const job = await client.jobs.enqueue({ task_name: "send_email", queue_name: "w-complete", payload: { to: "a@example.com" } });
    const done = await settled(job.id, "completed");
    assert.deepEqual(done.result, { sent: "a@example.com", delivery: 1 });
  } finally {
    await w.stop();
  }
});

test("an ack refused while the server is away is made again, and the job runs once", async () => {
  // Before: the ack was given up after the transport's two quick repeats (three refusals), the lease expired, and
  // the job ran again.
  let acks = 0;
  const refusing: typeof fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (url.endsWith("/v1/worker/ack") && ++acks <= 3) throw new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } });
    return fetch(input, init);
  };
  const runs: number[] = [];
  const w = worker("w-refused-acks", { fetch: refusing, leaseSeconds: 30 }).task("t", async (_payload, ctx) => {
    runs.push(ctx.job.delivery_count);
    return "done";
  });
  w.start();
  try {
    const job = await client.jobs.enqueue({ task_name: "t", queue_name: "w-refused-acks" });
    const done = await settled(job.id, "completed");
    assert.deepEqual([done.result, done.delivery_count, done.retry_count, runs, acks], ["done", 1, 0, [1], 4]);
  } finally {
    await w.stop();
  }
});

test("a thrown error fails the delivery; the job is retried and then completes", async () => {
  const w = worker("w-retry").task("flaky", (_payload, ctx) => {
    if (ctx.job.delivery_count === 1) throw new Error("first try fails");
    return "second try";
  });
  w.start();
  try {
    const job = await client.jobs.enqueue({ task_name: "flaky", queue_name: "w-retry", backoff: fastRetry });
    const done = await settled(job.id, "completed");
    assert.equal(done.retry_count, 1);
    assert.equal(done.delivery_count, 2);
    assert.equal(done.result, "second try");
  } finally {
    await w.stop();
  }
});

test("RetryError chooses the retry delay", async () => {
  const w = worker("w-retry-after").task("later", () => {
    throw new RetryError(3600, "rate limited");
  });
  w.start();
  try {
    const job = await client.jobs.enqueue({ task_name: "later", queue_name: "w-retry-after" });
    const retrying = await settled(job.id, "retrying");
    assert.match(retrying.error_message ?? "", /rate limited/);
    const wait = Date.parse(retrying.scheduled_at) - Date.now();
    assert.ok(wait > 3500_000 && wait <= 3600_000, `scheduled ${wait} ms ahead`);
  } finally {
    await w.stop();
  }
});

test("a job that keeps failing is dead-lettered with the error message", async () => {
  const w = worker("w-dead").task("broken", () => {
    throw new TypeError("cannot read the thing");
  });
  w.start();
  try {
    const job = await client.jobs.enqueue({ task_name: "broken", queue_name: "w-dead", max_retries: 1, backoff: fastRetry });
    const dead = await settled(job.id, "dead_letter");
    assert.equal(dead.delivery_count, 2);
    const [summary, stack] = (dead.error_message ?? "").split("\n\n");
    assert.equal(summary, "TypeError: cannot read the thing"); // the first line, what lists show; then the stack
    assert.match(stack ?? "", /^TypeError: cannot read the thing\n {4}at .*worker\.test\.js/);
  } finally {
    await w.stop();
  }
});

test("FatalError dead-letters at once, whatever retries are left", async () => {
  const w = worker("w-fatal").task("hopeless", () => {
    throw new FatalError("bad input");
  });
  w.start();
  try {
    const job = await client.jobs.enqueue({ task_name: "hopeless", queue_name: "w-fatal", max_retries: 5 });
    const dead = await settled(job.id, "dead_letter");
    assert.equal(dead.delivery_count, 1);
    assert.match(dead.error_message ?? "", /bad input/);
  } finally {
    await w.stop();
  }
});

test("workers lease only the tasks they have: another task's job waits for its own worker", async () => {
  const mailer = worker("w-own-tasks").task("send_email", () => "sent");
  const stranger = await client.jobs.enqueue({ task_name: "resize", queue_name: "w-own-tasks" });
  const mail = await client.jobs.enqueue({ task_name: "send_email", queue_name: "w-own-tasks" });
  mailer.start();
  try {
    assert.equal((await settled(mail.id, "completed")).result, "sent");
  } finally {
    await mailer.stop();
  }
  assert.equal((await client.jobs.get(stranger.id)).status, "pending"); // older, and still left alone
  const resizer = worker("w-own-tasks").task("resize", () => "resized");
  resizer.start();
  try {
    assert.equal((await settled(stranger.id, "completed")).result, "resized");
  } finally {
    await resizer.stop();
  }
});

for (const [key, refusal] of [
  ["no-such-key", AuthenticationError],
  [API_KEY, PermissionDeniedError],
] as const) {
  test(`a refused key (${refusal.name}) stops the worker with one clear error instead of retrying`, async () => {
    const { fetch, calls } = countingFetch();
    const logger = new Lines();
    const w = worker("w-refused", { workerKey: key, fetch, logger, onError: (error) => assert.fail(String(error)) }).task("t", () => null);
    await assert.rejects(w.start(), refusal);
    assert.equal(calls.get("/v1/worker/lease"), 1);
    const errors = logger.of("error");
    assert.equal(errors.length, 1);
    assert.match(errors[0] ?? "", /the server refused the worker key .*not a tenant API key/);
    await w.stop(); // already stopped: resolves
  });
}

test("the defaults are the Python SDK's", () => {
  // Python: Worker(concurrency=10, wait_seconds=1.0, lease_seconds=30.0, shutdown_grace_seconds=30.0, ack_batch=100,
  // ack_interval=0.01), checked in tests/sdk/test_worker_dx.py.
  assert.deepEqual(Worker.defaults, {
    concurrency: 10,
    waitSeconds: 1,
    leaseSeconds: 30,
    shutdownGraceMs: 30_000,
    ackBatch: 100,
    ackIntervalMs: 10,
  });
});
test("cancelling a running job aborts the handler's signal with a LeaseLostError", async () => {
  const started = deferred<string>();
  const aborted = deferred<unknown>();
  const w = worker("w-cancel").task("long", async (_payload, ctx) => {
    started.resolve(ctx.job.id);
    await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
    aborted.resolve(ctx.signal.reason);
    throw ctx.signal.reason;
  });
  w.start();
  try {
    const job = await client.jobs.enqueue({ task_name: "long", queue_name: "w-cancel" });
    assert.equal(await started.promise, job.id);
    await client.jobs.cancel(job.id);
    assert.ok((await aborted.promise) instanceof LeaseLostError);
    assert.equal((await client.jobs.get(job.id)).status, "cancelled");
  } finally {
    await w.stop();
  }
});

test("heartbeats extend the lease of a job that runs longer than it", async () => {
  let extended = false;
  const w = worker("w-heartbeat", { leaseSeconds: 1, heartbeatSeconds: 0.2 }).task("steady", async (_payload, ctx) => {
    await new Promise((resolve) => setTimeout(resolve, 700));
    const now = await client.jobs.get(ctx.job.id);
    extended = Date.parse(now.locked_until ?? "") > Date.parse(ctx.job.locked_until ?? "");
    return "kept";
  });
  w.start();
  try {
    const job = await client.jobs.enqueue({ task_name: "steady", queue_name: "w-heartbeat" });
    const done = await settled(job.id, "completed");
    assert.ok(extended);
    assert.equal(done.delivery_count, 1);
  } finally {
    await w.stop();
  }
});

test("stop() during an idle long-poll lets it answer within its wait and leases nothing after", async () => {
  const { fetch, calls } = countingFetch();
  const w = worker("w-idle", { waitSeconds: Worker.defaults.waitSeconds, fetch }).task("idle", () => null);
  const running = w.start();
  await waitFor(
    async () => calls.get("/v1/worker/lease") ?? 0,
    (count) => count >= 2, // the first lease does not wait (it cannot be parked); the second, after it found none, does
  );
  const began = Date.now();
  await w.stop();
  await running;
  assert.ok(Date.now() - began < 10_000, `stop() took ${Date.now() - began} ms`);
  assert.equal(calls.get("/v1/worker/lease"), 2); // none after the stop
  const job = await client.jobs.enqueue({ task_name: "idle", queue_name: "w-idle" });
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal((await client.jobs.get(job.id)).status, "pending");
});

test("stop() never cuts a lease whose answer is on its way: the jobs it brings are released, not stranded", async () => {
  // The answer is held back after the server claimed for it, as if still on the wire. Cut then (an aborted fetch),
  // its jobs would sit `running` until their leases expire, each then counting a failed delivery.
  const answered = deferred();
  const go = deferred();
  let first = true;
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const response = await globalThis.fetch(input, init);
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.pathname === "/v1/worker/lease" && first) {
      first = false;
      answered.resolve();
      const signal = init?.signal;
      await new Promise<void>((resolve, reject) => {
        void go.promise.then(resolve);
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    }
    return response;
  };
  const jobs = await client.jobs.enqueueMany(Array.from({ length: 3 }, () => ({ task_name: "in-flight", queue_name: "w-in-flight" })));
  const w = worker("w-in-flight", { fetch }).task("in-flight", () => null);
  const running = w.start();
  await answered.promise;
  const stopping = w.stop();
  go.resolve();
  await stopping;
  await running;
  for (const job of jobs) {
    const back = await client.jobs.get(job.id);
    assert.deepEqual([back.status, back.delivery_count, back.retry_count], ["pending", 0, 0]);
  }
});

test("stop() never cuts a parked long-poll: work that arrived for it a moment before is released, not stranded", async () => {
  // A job arrives for the parked poll and the server answers it; the answer is held back, as if still on the wire,
  // when the worker stops. Cut then (an aborted fetch), the job would sit `running` until its lease expired, then
  // count a failed delivery (the chaos suite's rolling restarts saw it).
  const parked = deferred();
  const answered = deferred();
  const go = deferred();
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const request = input instanceof Request ? input : undefined;
    const body = request ? await request.clone().text() : String(init?.body ?? "");
    const polls = new URL(request?.url ?? String(input)).pathname === "/v1/worker/lease" && JSON.parse(body).wait_seconds > 0;
    if (polls) parked.resolve();
    const response = await globalThis.fetch(input, init);
    if (polls && ((await response.clone().json()) as { jobs: unknown[] }).jobs.length > 0) {
      answered.resolve();
      const signal = init?.signal ?? request?.signal;
      await new Promise<void>((resolve, reject) => {
        void go.promise.then(resolve);
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    }
    return response;
  };
  const w = worker("w-parked", { fetch }).task("parked", () => null);
  const running = w.start();
  await parked.promise; // the first lease found nothing; the second waits for work
  const job = await client.jobs.enqueue({ task_name: "parked", queue_name: "w-parked" });
  await answered.promise;
  const stopping = w.stop();
  go.resolve();
  await stopping;
  await running;
  const back = await client.jobs.get(job.id);
  assert.deepEqual([back.status, back.delivery_count, back.retry_count], ["pending", 0, 0]);
});

test("stopOnSignals: SIGTERM stops the worker gracefully", async () => {
  const started = deferred();
  const release = deferred();
  const w = worker("w-sigterm").task("held", async () => {
    started.resolve();
    await release.promise;
    return "finished";
  });
  const dispose = w.stopOnSignals(["SIGTERM"]);
  try {
    const running = w.start();
    const job = await client.jobs.enqueue({ task_name: "held", queue_name: "w-sigterm" });
    await started.promise;
    process.kill(process.pid, "SIGTERM");
    release.resolve();
    await running;
    assert.equal((await client.jobs.get(job.id)).status, "completed");
  } finally {
    dispose();
  }
});

test("stopOnSignals: the first signal says what it finishes, a second quits at once", async () => {
  const started = deferred();
  const logger = new Lines();
  const w = worker("w-quit", { logger, workerId: "w-3" }).task(
    "stubborn",
    async (_payload, ctx) => {
      started.resolve();
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
    },
  );
  const dispose = w.stopOnSignals(["SIGTERM"]);
  try {
    const running = w.start();
    const job = await client.jobs.enqueue({ task_name: "stubborn", queue_name: "w-quit", backoff: fastRetry });
    await started.promise;
    process.kill(process.pid, "SIGTERM");
    await waitFor(
      async () => logger.of("info").join("\n"),
      (text) => text.includes("worker w-3: finishing 1 running jobs (up to 30 s) (Ctrl-C again to quit)"),
    );
    process.kill(process.pid, "SIGTERM");
    await running; // well before the 30 s grace period
    const back = await client.jobs.get(job.id);
    // Released: back on the queue at once, as before that delivery, no retry counted.
    assert.deepEqual([back.status, back.retry_count, back.delivery_count], ["pending", 0, 0]);
    assert.deepEqual(logger.of("warn"), ["worker w-3: SIGTERM again: quitting now"]);
  } finally {
    dispose();
  }
});

test("runLocal runs a handler once without a server, as the worker would", async () => {
  const w = new Worker({ baseUrl: "http://127.0.0.1:9", queues: ["mail"] })
    .task<{ to: string; at: Date }>("send_email", (payload, ctx) => ({
      to: payload.to,
      at: payload.at, // a Date in the payload arrives as its JSON text, as from the server
      delivery: ctx.job.delivery_count,
      queue: ctx.job.queue_name,
      aborted: ctx.signal.aborted,
    }))
    .task("flaky", (_payload, ctx) => {
      if (ctx.job.delivery_count < 3) throw new RetryError(5, "not yet");
      throw new FatalError("gave up");
    });
  assert.deepEqual(await w.runLocal("send_email", { to: "ada@example.com", at: new Date(0) }), {
    to: "ada@example.com",
    at: "1970-01-01T00:00:00.000Z",
    delivery: 1,
    queue: "mail",
    aborted: false,
  });
  await assert.rejects(w.runLocal("flaky", {}, { delivery_count: 2 }), (error) => error instanceof RetryError && error.afterSeconds === 5);
  await assert.rejects(w.runLocal("flaky", {}, { delivery_count: 3 }), FatalError);
  await assert.rejects(w.runLocal("nope"), /no handler for task "nope" \(it has: flaky, send_email\)/);
});

test("a task definition types the payload and result on both sides", async () => {
  const double = defineTask<{ n: number }, { doubled: number }>("double");
  const w = worker("w-typed").task(double, (payload) => ({ doubled: payload.n * 2 }));
  const jobs = [
    await double.enqueue(client, { n: 21 }, { queue_name: "w-typed" }),
    ...(await client.jobs.enqueueMany([double.job({ n: 1 }, { queue_name: "w-typed" })])),
  ];
  w.start();
  try {
    for (const job of jobs) await settled(job.id, "completed");
  } finally {
    await w.stop();
  }
  const done = await double.get(client, jobs[0]?.id ?? "");
  assert.equal(done.result?.doubled, 42);
  assert.deepEqual((await client.jobs.get(jobs[1]?.id ?? "")).result, { doubled: 2 });
});

/** A fetch that counts the requests per path (ids folded), for tests about how many calls the worker makes. */
function countingFetch(): { fetch: typeof globalThis.fetch; calls: Map<string, number> } {
  const calls = new Map<string, number>();
  const fetch: typeof globalThis.fetch = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const path = url.pathname.replace(/job_[A-Za-z0-9]+/, "{id}");
    calls.set(path, (calls.get(path) ?? 0) + 1);
    return globalThis.fetch(input, init);
  };
  return { fetch, calls };
}

test("a busy worker at concurrency 32 drains many jobs, and Node printed no warning in this file", async () => {
  const w = worker("w-busy", { concurrency: 32 }).task("quick", async () => {
    await new Promise((resolve) => setImmediate(resolve));
    return null;
  });
  const jobs = [];
  for (let batch = 0; batch < 3; batch += 1) {
    jobs.push(...(await client.jobs.enqueueMany(Array.from({ length: 200 }, () => ({ task_name: "quick", queue_name: "w-busy" })))));
  }
  w.start();
  try {
    await waitFor(
      async () => (await client.queues.list()).find((queue) => queue.name === "w-busy")?.completed ?? 0,
      (count) => count === jobs.length,
      30_000,
    );
  } finally {
    await w.stop();
  }
  await new Promise((resolve) => setImmediate(resolve)); // a warning is emitted on the next tick
  assert.deepEqual(
    warnings.map((warning) => `${warning.name}: ${warning.message}`),
    [],
  );
});
