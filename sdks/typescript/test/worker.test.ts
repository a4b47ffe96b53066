import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import {
  FatalError,
  type Job,
  LeaseLostError,
  QueueFlow,
  RetryError,
  ShutdownError,
  Worker,
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

/** A worker on its own queue (so tests never take each other's jobs), stopped by the test's end. */
function worker(queue: string, options: Partial<WorkerOptions> = {}): Worker {
  return new Worker({
    baseUrl: server.url,
    workerKey: WORKER_KEY,
    queues: [queue],
    waitSeconds: 0.5,
    heartbeatSeconds: 0.1,
    onError: (error) => assert.fail(`unexpected worker error: ${String(error)}`),
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
    assert.equal(dead.error_message, "TypeError: cannot read the thing");
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

test("a worker leases only the tasks it has handlers for: another's job is left pending", async () => {
  const w = worker("w-unknown").task("known", () => null);
  w.start();
  try {
    const unknown = await client.jobs.enqueue({ task_name: "unknown", queue_name: "w-unknown" });
    const known = await client.jobs.enqueue({ task_name: "known", queue_name: "w-unknown" });
    await settled(known.id, "completed");
    const left = await client.jobs.get(unknown.id);
    assert.deepEqual([left.status, left.delivery_count], ["pending", 0]);
  } finally {
    await w.stop();
  }
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

test("stop() during an idle long-poll waits it out and leases nothing after", async () => {
  const w = worker("w-idle", { waitSeconds: 0.3 }).task("idle", () => null);
  const running = w.start();
  await new Promise((resolve) => setTimeout(resolve, 50));
  await w.stop();
  await running;
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
