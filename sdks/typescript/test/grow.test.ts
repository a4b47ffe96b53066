/**
 * Workflows that grow and wait against a live server: `ctx.addSteps` from a running Worker, its errors as the
 * client's classes, `workflows.signal` (kept when early, a repeat harmless) and `workflows.retry`.
 */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { InvalidStateError, LeaseLostError, NotFoundError, QueueFlow, ValidationError, Worker, steps } from "../src/index.js";
import { HttpSource } from "../src/worker/httpSource.js";
import { API_KEY, type LiveServer, WORKER_KEY, startServer } from "./live.js";

let server: LiveServer;
let client: QueueFlow;

before(async () => {
  server = await startServer();
  client = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY });
});
after(() => server.stop());

function source(queue: string): HttpSource {
  return new HttpSource(
    { baseUrl: server.url, token: WORKER_KEY },
    { queues: [queue], leaseSeconds: 30, waitSeconds: 0, workerId: "test", taskNames: () => ["split", "t", "write"] },
  );
}

test("a split step adds map steps that reduce waits for; adding them again adds nothing twice", async () => {
  const worker = new Worker({ baseUrl: server.url, workerKey: WORKER_KEY, queues: ["mr"], waitSeconds: 0.5 });
  const answered: [string, string | null | undefined][][] = [];
  worker.task<{ rows: number[] }>("split", async (payload, ctx) => {
    const maps = payload.rows.map((row, i) => steps.task(`map_${i}`, "square", { row }, { queue_name: "mr", required_by: ["reduce"] }));
    answered.push((await ctx.addSteps(maps)).map((step) => [step.name, step.added_by]));
    await ctx.addSteps(maps); // a delivery run again after a crash
    return maps.length;
  });
  worker.task<{ row: number }>("square", (payload) => payload.row ** 2);
  worker.task<{ _context: Record<string, number> }>("reduce", (payload) =>
    Object.entries(payload._context).reduce((sum, [name, value]) => (name.startsWith("map_") ? sum + value : sum), 0),
  );
  const running = worker.start();
  try {
    const split = steps.task("split", "split", { rows: [2, 3] }, { queue_name: "mr" });
    const created = await client.workflows.create(
      steps.workflow("mr", [split, steps.task("reduce", "reduce", {}, { queue_name: "mr", depends_on: [split] })]),
    );
    const done = await client.workflows.wait(created.id, { timeoutMs: 10_000 });
    assert.equal(done.status, "completed");
    assert.equal(done.context.reduce, 13);
    assert.deepEqual(answered, [
      [
        ["map_0", "split"],
        ["map_1", "split"],
      ],
    ]);
    assert.deepEqual(done.steps.find((step) => step.name === "reduce")?.depends_on.sort(), ["map_0", "map_1", "split"]);
  } finally {
    await worker.stop();
    await running;
  }
});

test("addSteps errors are the client's classes", async () => {
  const calls = source("grow-errors");
  try {
    await client.jobs.enqueue({ task_name: "t", queue_name: "grow-errors" });
    const [lonely] = await calls.lease(1, new AbortController().signal);
    assert.ok(lonely);
    await assert.rejects(calls.addSteps(lonely, [steps.task("x", "t")]), InvalidStateError);
    const split = steps.task("split", "split", {}, { queue_name: "grow-errors" });
    await client.workflows.create(steps.workflow("w", [split, steps.task("reduce", "t", {}, { depends_on: [split] })]));
    const [job] = await calls.lease(1, new AbortController().signal);
    assert.ok(job);
    await assert.rejects(calls.addSteps(job, [steps.task("m", "t", {}, { required_by: ["nope"] })]), ValidationError);
    await assert.rejects(calls.addSteps({ ...job, lease_token: "stale" }, [steps.task("m", "t")]), LeaseLostError);
    const [nap] = await calls.addSteps(job, [steps.sleep("nap", 5, { required_by: ["reduce"] })]);
    assert.deepEqual([nap?.name, nap?.status, nap?.added_by], ["nap", "waiting", "split"]);
  } finally {
    calls.close();
  }
});

test("a signal sent early is kept; a repeat changes nothing, another payload is refused; retry re-runs a failed workflow", async () => {
  const calls = source("review");
  try {
    const draft = steps.task("draft", "write", {}, { queue_name: "review", max_retries: 0 });
    const created = await client.workflows.create(
      steps.workflow("review", [draft, steps.signal("approval", { timeout_seconds: 3600, depends_on: [draft] })]),
    );
    const early = await client.workflows.signal(created.id, "approval", { by: "ada" });
    assert.deepEqual(
      early.steps.map((step) => step.status),
      ["enqueued", "pending"],
    );
    assert.equal((await client.workflows.signal(created.id, "approval", { by: "ada" })).status, "running");
    await assert.rejects(client.workflows.signal(created.id, "approval", { by: "bo" }), InvalidStateError);
    await assert.rejects(client.workflows.signal(created.id, "nobody-waits"), NotFoundError);
    await assert.rejects(client.workflows.retry(created.id), InvalidStateError); // running

    const [job] = await calls.lease(1, new AbortController().signal);
    assert.ok(job);
    await calls.ack([{ id: job.id, lease_token: job.lease_token, outcome: { error: "boom", retryable: false } }]);
    assert.equal((await client.workflows.get(created.id)).status, "failed");
    const retried = await client.workflows.retry(created.id);
    assert.equal(retried.status, "running");
    assert.notEqual(retried.steps[0]?.job_id, job.id);
  } finally {
    calls.close();
  }
});

test("a schedule may carry a workflow built with steps, instead of a task; job fields beside it are refused", async () => {
  const extract = steps.task("extract", "extract", { full: true });
  const nightly = steps.workflow("nightly-etl", [extract, steps.signal("ok", { depends_on: [extract], timeout_seconds: 60 })], {
    context: { run: 1 },
  });
  const created = await client.schedules.create({ name: "nightly-etl", cron: "0 3 * * *", workflow: nightly });
  assert.equal(created.task_name, null);
  assert.equal(created.queue_name, null);
  assert.deepEqual(
    (created.workflow as { steps: { name: string }[] }).steps.map((step) => step.name),
    ["extract", "ok"],
  );
  await assert.rejects(client.schedules.create({ name: "mixed", cron: "0 3 * * *", workflow: nightly, priority: 5 }), ValidationError);
  await client.schedules.delete("nightly-etl");
});
