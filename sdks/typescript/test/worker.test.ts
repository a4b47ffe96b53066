import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import {
  AuthenticationError,
  defineTask,
  FatalError,
  type Job,
  type LeasedJob,
  LeaseLostError,
  PermissionDeniedError,
  QueueFlow,
  RetryError,
  ShutdownError,
  Worker,
  type WorkerLogger,
  type WorkerOptions,
} from "../src/index.js";
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

/** The lines a worker logged, by level. */
class Lines implements WorkerLogger {
  readonly lines: [level: "info" | "warn" | "error", message: string][] = [];
  info(message: string): void {
    this.lines.push(["info", message]);
  }
  warn(message: string): void {
    this.lines.push(["warn", message]);
  }
  error(message: string): void {
    this.lines.push(["error", message]);
  }
  of(level: "info" | "warn" | "error"): string[] {
    return this.lines.filter(([each]) => each === level).map(([, message]) => message);
  }
}

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

test("never more than `concurrency` jobs run at once, and all of them finish", async () => {
  let running = 0;
  let most = 0;
  const w = worker("w-concurrency", { concurrency: 3 }).task("slow", async () => {
    running += 1;
    most = Math.max(most, running);
    await new Promise((resolve) => setTimeout(resolve, 50));
    running -= 1;
    assert.ok(w.runningJobs <= 3);
  });
  const jobs = await client.jobs.enqueueMany(Array.from({ length: 10 }, () => ({ task_name: "slow", queue_name: "w-concurrency" })));
  w.start();
  try {
    for (const job of jobs) await settled(job.id, "completed");
    assert.equal(most, 3);
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

test("a job of a task it has no handler for is dead-lettered, and each such task named once in a warning", async () => {
  // A server that ignored `task_names`: the request's list is taken out on its way.
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const request = new Request(input, init);
    if (!request.url.endsWith("/v1/worker/lease")) return globalThis.fetch(request);
    const body = (await request.json()) as Record<string, unknown>;
    delete body.task_names;
    return globalThis.fetch(new Request(request, { body: JSON.stringify(body) }));
  };
  const logger = new Lines();
  const w = worker("w-unknown", { fetch, logger, concurrency: 4 }).task("known", () => null);
  const jobs = await client.jobs.enqueueMany(
    ["resize", "resize", "thumbnail"].map((task_name) => ({ task_name, queue_name: "w-unknown" })),
  );
  w.start();
  try {
    for (const job of jobs) {
      const dead = await settled(job.id, "dead_letter");
      assert.match(dead.error_message ?? "", /^no handler for task "(resize|thumbnail)" on this worker \(it has: known\)$/);
    }
  } finally {
    await w.stop();
  }
  const warnings = logger.of("warn");
  assert.equal(warnings.length, 2, warnings.join("\n"));
  const pattern = /^worker [^ ]+: leased job job_\w+ of task "(\w+)", which this worker has no handler for \(it has: known\)/;
  assert.deepEqual(
    warnings.map((line) => pattern.exec(line)?.[1]).sort(), // jobs of one batch are claimed in no set order
    ["resize", "thumbnail"],
  );
});

test("it logs a startup line, a warning with the stack for each failure, and with logJobs a line per job", async () => {
  const logger = new Lines();
  const w = worker("w-logs", { logger, logJobs: true, concurrency: 3, workerId: "w-1" })
    .task("ok", () => 1)
    .task("boom", () => {
      throw new RangeError("boom");
    });
  const ok = await client.jobs.enqueue({ task_name: "ok", queue_name: "w-logs" });
  const boom = await client.jobs.enqueue({ task_name: "boom", queue_name: "w-logs", max_retries: 0 });
  w.start();
  try {
    await settled(ok.id, "completed");
    await settled(boom.id, "dead_letter");
  } finally {
    await w.stop();
  }
  const info = logger.of("info");
  assert.equal(info[0], "worker w-1: started; queues: w-logs; tasks: boom, ok; concurrency 3");
  assert.ok(info.some((line) => line.startsWith(`ok job ${ok.id} (delivery 1): completed in `)), info.join("\n"));
  assert.equal(info.at(-1), "worker w-1: stopped");
  const [failure, ...others] = logger.of("warn");
  assert.deepEqual(others, []);
  assert.match(failure ?? "", new RegExp(`^boom job ${boom.id} \\(delivery 1\\): failed after \\d+\\.\\d{3} s \\(dead-lettered: no retries left\\): RangeError: boom\n\nRangeError: boom\n {4}at `));
});

test("without logJobs, a completed job writes no line", async () => {
  const logger = new Lines();
  const w = worker("w-quiet", { logger, workerId: "w-2" }).task("ok", () => 1);
  const job = await client.jobs.enqueue({ task_name: "ok", queue_name: "w-quiet" });
  w.start();
  try {
    await settled(job.id, "completed");
  } finally {
    await w.stop();
  }
  assert.deepEqual(logger.lines, [
    ["info", "worker w-2: started; queues: w-quiet; tasks: ok; concurrency 10"],
    ["info", "worker w-2: stopped"],
  ]);
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
  // Python: Worker(concurrency=10, wait_seconds=20.0, lease_seconds=30.0, shutdown_grace_seconds=30.0, ack_batch=100,
  // ack_interval=0.01), checked in tests/sdk/test_worker_dx.py.
  assert.deepEqual(Worker.defaults, {
    concurrency: 10,
    waitSeconds: 20,
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

test("stop() during an idle long-poll ends it at once and leases nothing after", async () => {
  const { fetch, calls } = countingFetch();
  const w = worker("w-idle", { waitSeconds: 60, fetch }).task("idle", () => null);
  const running = w.start();
  await waitFor(
    async () => calls.get("/v1/worker/lease") ?? 0,
    (count) => count === 1,
  );
  const began = Date.now();
  await w.stop();
  await running;
  assert.ok(Date.now() - began < 10_000, `stop() took ${Date.now() - began} ms`);
  const job = await client.jobs.enqueue({ task_name: "idle", queue_name: "w-idle" });
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal((await client.jobs.get(job.id)).status, "pending");
});

test("stop() lets held jobs finish and leases nothing more", async () => {
  const started = deferred();
  const release = deferred();
  // No prefetch: no long-poll is in flight while the one slot is busy (one would be waited out, and run what it brings).
  const w = worker("w-stop", { prefetch: 0 }).task("held", async () => {
    started.resolve();
    await release.promise;
    return "finished";
  });
  const running = w.start();
  const job = await client.jobs.enqueue({ task_name: "held", queue_name: "w-stop" });
  await started.promise;
  const stopped = w.stop();
  await new Promise((resolve) => setImmediate(resolve));
  const later = await client.jobs.enqueue({ task_name: "held", queue_name: "w-stop" });
  release.resolve();
  await stopped;
  await running;
  assert.equal((await client.jobs.get(job.id)).status, "completed");
  assert.equal((await client.jobs.get(later.id)).status, "pending");
  assert.equal(w.activeJobs, 0);
});

test("past the grace period stop() aborts the handler and hands the job back", async () => {
  const started = deferred();
  let reason: unknown;
  const w = worker("w-grace", { shutdownGraceMs: 100 }).task("stubborn", async (_payload, ctx) => {
    started.resolve();
    await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
    reason = ctx.signal.reason;
  });
  w.start();
  const job = await client.jobs.enqueue({ task_name: "stubborn", queue_name: "w-grace", backoff: fastRetry });
  await started.promise;
  await w.stop();
  assert.ok(reason instanceof ShutdownError);
  const back = await client.jobs.get(job.id);
  assert.ok(back.status === "retrying" || back.status === "pending", back.status);
  assert.match(back.error_message ?? "", /worker stopped/);
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
      (text) => text.includes("worker w-3: finishing 1 jobs (up to 30 s) (Ctrl-C again to quit)"),
    );
    process.kill(process.pid, "SIGTERM");
    await running; // well before the 30 s grace period
    const back = await client.jobs.get(job.id);
    assert.ok(back.status === "retrying" || back.status === "pending", back.status);
    assert.match(back.error_message ?? "", /worker stopped/);
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

test("outcomes and heartbeats go out in batches: no request per job", async () => {
  const { fetch, calls } = countingFetch();
  const gate = deferred();
  let arrived = 0;
  const w = worker("w-batches", { concurrency: 8, fetch, heartbeatSeconds: 0.05 }).task("gated", async () => {
    arrived += 1;
    await gate.promise;
    return null;
  });
  const jobs = await client.jobs.enqueueMany(Array.from({ length: 60 }, () => ({ task_name: "gated", queue_name: "w-batches" })));
  w.start();
  try {
    await waitFor(
      async () => arrived,
      (count) => count === 8,
    );
    await waitFor(
      async () => calls.get("/v1/worker/heartbeat") ?? 0,
      (count) => count >= 2,
    );
    gate.resolve();
    for (const job of jobs) await settled(job.id, "completed");
  } finally {
    await w.stop();
  }
  assert.equal(calls.get("/v1/worker/jobs/{id}/complete"), undefined);
  assert.equal(calls.get("/v1/worker/jobs/{id}/heartbeat"), undefined);
  assert.equal(
    w.ackBatches.reduce((a, b) => a + b, 0),
    60,
  );
  assert.ok(w.ackBatches.length < 60, `${w.ackBatches.length} acks for 60 jobs`);
});

test("a job whose handler never reads ctx.signal gets no AbortSignal made for it; one that reads it gets a live one", async () => {
  // Node 20 makes each AbortSignal with Object.setPrototypeOf, and V8 then carries it into the old generation
  // even when it is garbage: one per job filled the old generation of a busy worker (its peak RSS).
  const { fetch, calls } = countingFetch();
  const requests = () => [...calls.values()].reduce((a, b) => a + b, 0);
  const ran = deferred();
  let count = 0;
  const signals: AbortSignal[] = [];
  const w = worker("w-signal", { fetch })
    .task("blind", async () => {
      if (++count === 100) ran.resolve();
      return null;
    })
    .task("reads", async (_payload, ctx) => {
      signals.push(ctx.signal);
      return ctx.signal.aborted;
    });
  const blind = await client.jobs.enqueueMany(Array.from({ length: 100 }, () => ({ task_name: "blind", queue_name: "w-signal" })));
  // Counted while only the worker makes requests: each makes a few (undici's Requests, a lease call's own), and
  // the worker sends a handful for 100 jobs; one a job would make over 100.
  const made: AbortController[] = [];
  const Original = globalThis.AbortController;
  globalThis.AbortController = class extends Original {
    constructor() {
      super();
      made.push(this);
    }
  };
  let sent: number;
  try {
    w.start();
    await ran.promise;
    sent = requests();
  } finally {
    globalThis.AbortController = Original;
  }
  try {
    assert.ok(made.length < 50, `${made.length} AbortControllers for ${sent} requests and 100 jobs`);
    for (const job of blind) await settled(job.id, "completed");
    const reads = await client.jobs.enqueue({ task_name: "reads", queue_name: "w-signal" });
    assert.equal((await settled(reads.id, "completed")).result, false);
    assert.equal(signals.length, 1);
    assert.ok(signals[0] instanceof AbortSignal);
  } finally {
    await w.stop();
  }
});

test("jobs are leased ahead of free slots, up to `prefetch`, and all run", async () => {
  const gate = deferred();
  let arrived = 0;
  const w = worker("w-prefetch", { concurrency: 2, prefetch: 3 }).task("gated", async () => {
    arrived += 1;
    await gate.promise;
    return null;
  });
  const jobs = await client.jobs.enqueueMany(Array.from({ length: 7 }, () => ({ task_name: "gated", queue_name: "w-prefetch" })));
  w.start();
  try {
    await waitFor(
      async () => w.activeJobs,
      (count) => count === 5,
    );
    assert.equal(arrived, 2);
    assert.equal(w.runningJobs, 2);
    gate.resolve();
    for (const job of jobs) await settled(job.id, "completed");
  } finally {
    await w.stop();
  }
});

test("while a whole capacity of outcomes waits for its acks, it leases no more", async () => {
  // Leasing on while acks lagged filled a slow server with leases the worker could not record in time.
  const gate = deferred();
  let acking = false;
  let leasing = 0;
  let ran = 0;
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const request = new Request(input, init);
    if (request.url.endsWith("/v1/worker/ack")) {
      acking = true;
      await gate.promise;
      return globalThis.fetch(request);
    }
    leasing += 1;
    try {
      return await globalThis.fetch(request);
    } finally {
      leasing -= 1;
    }
  };
  const w = worker("w-ack-lag", { concurrency: 2, prefetch: 2, fetch }).task("quick", () => {
    ran += 1;
    return null;
  });
  const jobs = await client.jobs.enqueueMany(Array.from({ length: 40 }, () => ({ task_name: "quick", queue_name: "w-ack-lag" })));
  w.start();
  try {
    // Reached only when the loop waits for acks: while it leases on, a lease (a long-poll, once the queue is
    // empty) is always in flight.
    await waitFor(
      async () => ({ acking, leasing, active: w.activeJobs, ran }),
      (state) => state.acking && state.leasing === 0 && state.active === 0,
    );
    assert.ok(ran <= 8, `${ran} jobs ran while the first ack hung`); // the outcomes waiting (4), and the places (4)
    gate.resolve();
    for (const job of jobs) await settled(job.id, "completed");
  } finally {
    gate.resolve(); // a failed check must not leave stop() waiting on the hung ack
    await w.stop();
  }
});

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

test("an outcome recorded while an ack is in flight is sent, and so is every later one (the ack chain never sticks)", { timeout: 15_000 }, async () => {
  // The first ack is held until the second job's outcome is recorded: the chain sends that one too, and ends
  // before the timer that outcome armed fires; that timer then finds nothing to send. Every later outcome must
  // still go out (the chain once stayed "in flight" forever from there, and its jobs were heartbeated forever).
  // A third job runs throughout: with no job held, an outcome goes at once instead of arming the timer.
  const ackHeld = deferred();
  const releaseAck = deferred();
  let acks = 0;
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const request = new Request(input, init);
    if (request.url.endsWith("/v1/worker/ack") && ++acks === 1) {
      ackHeld.resolve();
      await releaseAck.promise;
    }
    return globalThis.fetch(request);
  };
  const finished: string[] = [];
  const zReleased = deferred();
  const w = worker("w-ack-chain", { concurrency: 3, prefetch: 0, ackIntervalMs: 300, fetch }).task<{ name: string }>(
    "step",
    async ({ name }) => {
      if (name === "b") await ackHeld.promise; // ends while the first ack (a's) is in flight: two slots, whichever runs first
      if (name === "z") await zReleased.promise;
      finished.push(name);
      return name;
    },
  );
  const [a, b, z] = await client.jobs.enqueueMany([
    { task_name: "step", queue_name: "w-ack-chain", payload: { name: "a" } },
    { task_name: "step", queue_name: "w-ack-chain", payload: { name: "b" } },
    { task_name: "step", queue_name: "w-ack-chain", payload: { name: "z" } },
  ]);
  w.start();
  try {
    await waitFor(
      async () => finished.length,
      (count) => count === 2,
    );
    await new Promise((resolve) => setTimeout(resolve, 30)); // b's outcome is recorded, its timer armed
    releaseAck.resolve();
    await settled(a!.id, "completed");
    await settled(b!.id, "completed");
    await new Promise((resolve) => setTimeout(resolve, 400)); // b's timer has fired, with nothing left to send
    const c = await client.jobs.enqueue({ task_name: "step", queue_name: "w-ack-chain", payload: { name: "c" } });
    const done = await waitFor(
      () => client.jobs.get(c.id),
      (job) => job.status === "completed",
      3_000,
    );
    assert.equal(done.result, "c");
    zReleased.resolve();
    await settled(z!.id, "completed");
  } finally {
    zReleased.resolve();
    await w.stop();
  }
});

test("outcomes go at once when leasing waits for them, however long ackIntervalMs", { timeout: 15_000 }, async () => {
  // One slot and one job ahead (a capacity of 2, below ackBatch) stalled the worker for ackIntervalMs every two jobs:
  // leasing waited for the acks, and the acks for a batch that could not fill.
  const w = worker("w-ack-capacity", { concurrency: 1, prefetch: 1, ackIntervalMs: 60_000 }).task("step", async () => "ok");
  const jobs = await client.jobs.enqueueMany(
    Array.from({ length: 10 }, (_, n) => ({ task_name: "step", queue_name: "w-ack-capacity", payload: { n } })),
  );
  w.start();
  try {
    for (const job of jobs) await settled(job.id, "completed");
    assert.ok(Math.max(...w.ackBatches) <= 2);
  } finally {
    await w.stop();
  }
});

test("a job delivered again while its earlier delivery runs: the earlier one is aborted and never reported", async () => {
  // What a worker sees when a lease it holds expires and the janitor hands the job to it anew: the same job twice,
  // under two tokens. The first lease answer is doctored to show it (a copy of the job under a stale token ahead of
  // the real delivery); the server knows only the real token.
  const acked: string[] = [];
  let doctored = false;
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const request = input instanceof Request ? input : new Request(input, init);
    const path = new URL(request.url).pathname;
    if (path === "/v1/worker/ack") {
      const body = (await request.clone().json()) as { complete?: { lease_token: string }[]; fail?: { lease_token: string }[] };
      for (const item of [...(body.complete ?? []), ...(body.fail ?? [])]) acked.push(item.lease_token);
    }
    const response = await globalThis.fetch(request);
    if (path !== "/v1/worker/lease" || doctored) return response;
    const answer = (await response.json()) as { jobs: LeasedJob[] };
    if (answer.jobs[0] !== undefined) {
      doctored = true;
      answer.jobs = [{ ...answer.jobs[0], lease_token: "expired-token" }, ...answer.jobs];
    }
    return new Response(JSON.stringify(answer), { status: response.status, headers: response.headers });
  };
  const gate = deferred();
  const signals: AbortSignal[] = [];
  const w = worker("w-again", { concurrency: 2, fetch }).task("gated", async (_payload, { signal }) => {
    signals.push(signal);
    await gate.promise;
    return "done";
  });
  const job = await client.jobs.enqueue({ task_name: "gated", queue_name: "w-again" });
  w.start();
  try {
    await waitFor(
      async () => signals.length,
      (count) => count === 2,
    );
    assert.equal(signals[0]?.aborted, true, "the earlier delivery's handler is told its lease is lost");
    assert.equal(signals[1]?.aborted, false);
    gate.resolve();
    assert.equal((await settled(job.id, "completed")).result, "done");
  } finally {
    await w.stop();
  }
  assert.equal(acked.includes("expired-token"), false, `acked ${JSON.stringify(acked)}`);
  assert.equal(acked.length, 1);
});
