/** `jobs.wait`, `jobs.run` and `workflows.wait` against a live server: answered when the object finishes. */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { QueueFlow, WaitTimeoutError, Worker } from "../src/index.js";
import { API_KEY, type LiveServer, WORKER_KEY, startServer } from "./live.js";

let server: LiveServer;
let client: QueueFlow;

before(async () => {
  server = await startServer();
  client = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY });
});
after(() => server.stop());

function worker(queue: string): Worker {
  return new Worker({ baseUrl: server.url, workerKey: WORKER_KEY, queues: [queue], waitSeconds: 0.5 });
}

test("run enqueues a job and resolves with it once it has finished", async () => {
  const w = worker("wait-run").task<{ n: number }>("double", async (payload) => payload.n * 2);
  const running = w.start();
  try {
    const job = await client.jobs.run({ task_name: "double", queue_name: "wait-run", payload: { n: 21 } }, { timeoutMs: 20_000 });
    assert.equal(job.status, "completed");
    assert.equal(job.result, 42);
  } finally {
    await w.stop();
    await running;
  }
});

test("wait resolves with a dead-lettered job too", async () => {
  const job = await client.jobs.enqueue({ task_name: "boom", queue_name: "wait-dead", max_retries: 0 });
  const waiting = client.jobs.wait(job.id, { timeoutMs: 20_000 });
  const w = worker("wait-dead").task("boom", async () => {
    throw new Error("boom");
  });
  const running = w.start();
  try {
    const finished = await waiting;
    assert.equal(finished.status, "dead_letter");
  } finally {
    await w.stop();
    await running;
  }
});

test("wait rejects with WaitTimeoutError when the job is still unfinished", async () => {
  const job = await client.jobs.enqueue({ task_name: "nobody", queue_name: "wait-none" });
  await assert.rejects(client.jobs.wait(job.id, { timeoutMs: 50 }), WaitTimeoutError);
});

test("workflows.wait resolves once the workflow finishes", async () => {
  const workflow = await client.workflows.create({
    name: "two",
    steps: [
      { name: "a", task_name: "step", queue_name: "wait-wf" },
      { name: "b", task_name: "step", queue_name: "wait-wf", depends_on: ["a"] },
    ],
  });
  const w = worker("wait-wf").task("step", async () => "ok");
  const running = w.start();
  try {
    const finished = await client.workflows.wait(workflow.id, { timeoutMs: 20_000 });
    assert.equal(finished.status, "completed");
  } finally {
    await w.stop();
    await running;
  }
});

test("ctx.progress records the task's progress, which the job shows while it runs and after", async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let reported!: () => void;
  const seen = new Promise<void>((resolve) => (reported = resolve));
  const w = worker("progress").task("count", async (_payload, ctx) => {
    assert.equal(await ctx.progress({ done: 1, of: 2 }), true);
    reported();
    await gate;
    assert.equal(await ctx.progress({ done: 2, of: 2 }), true);
    return "counted";
  });
  const running = w.start();
  try {
    const job = await client.jobs.enqueue({ task_name: "count", queue_name: "progress" });
    await seen;
    assert.deepEqual((await client.jobs.get(job.id)).progress, { done: 1, of: 2 });
    release();
    const finished = await client.jobs.wait(job.id, { timeoutMs: 20_000 });
    assert.equal(finished.result, "counted");
    assert.deepEqual(finished.progress, { done: 2, of: 2 });
  } finally {
    await w.stop();
    await running;
  }
});
