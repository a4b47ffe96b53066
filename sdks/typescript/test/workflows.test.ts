import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { APIError, InvalidStateError, NotFoundError, QueueFlow, ValidationError, Worker, type Workflow } from "../src/index.js";
import { API_KEY, type LiveServer, OTHER_API_KEY, WORKER_KEY, startServer, waitFor } from "./live.js";

let server: LiveServer;
let client: QueueFlow;

before(async () => {
  server = await startServer();
  client = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY });
});
after(() => server.stop());

/** The problem an API call rejected with (fails the test if it resolved, or threw something else). */
async function problem(call: Promise<unknown>): Promise<APIError> {
  const error = await call.then(
    () => assert.fail("expected the call to be rejected"),
    (e: unknown) => e,
  );
  assert.ok(error instanceof APIError, `not an APIError: ${String(error)}`);
  return error;
}

test("a diamond workflow runs through a worker; get, list and iterate see it; a finished one cannot be cancelled", async () => {
  const worker = new Worker({ baseUrl: server.url, workerKey: WORKER_KEY, queues: ["wf"], concurrency: 2, waitSeconds: 0.5 });
  worker.task<{ n: number; _context: Record<string, unknown> }>("step", (payload) => ({ n: payload.n, saw: Object.keys(payload._context).sort() }));
  worker.start();
  try {
    const created = await client.workflows.create({
      name: "diamond",
      context: { run: 1 },
      steps: [
        { name: "a", task_name: "step", queue_name: "wf", payload: { n: 1 } },
        { name: "b", task_name: "step", queue_name: "wf", payload: { n: 2 }, depends_on: ["a"] },
        { name: "c", task_name: "step", queue_name: "wf", payload: { n: 3 }, depends_on: ["a"] },
        { name: "d", task_name: "step", queue_name: "wf", payload: { n: 4 }, depends_on: ["b", "c"], on_failure: "skip" },
      ],
    });
    assert.match(created.id, /^wf_/);
    assert.equal(created.tenant_id, "tenant-a");
    assert.equal(created.status, "running");
    assert.equal(created.completed_at, null);
    assert.deepEqual(
      created.steps.map((step) => [step.name, step.depends_on, step.on_failure]),
      [
        ["a", [], "halt"],
        ["b", ["a"], "halt"],
        ["c", ["a"], "halt"],
        ["d", ["b", "c"], "skip"],
      ],
    );
    const done = await waitFor(
      () => client.workflows.get(created.id),
      (workflow) => workflow.status !== "running",
    );
    assert.equal(done.status, "completed");
    assert.ok(done.completed_at);
    assert.deepEqual(
      done.steps.map((step) => step.status),
      ["completed", "completed", "completed", "completed"],
    );
    const d = await client.jobs.get(done.steps[3]?.job_id ?? "");
    assert.equal(d.workflow_id, created.id);
    assert.deepEqual((d.result as { saw: string[] }).saw, ["a", "b", "c", "run"]);

    const page = await client.workflows.list({ status: "completed", limit: 1 });
    assert.deepEqual(
      page.items.map((workflow) => workflow.id),
      [created.id],
    );
    assert.deepEqual((await client.workflows.list({ status: "running" })).items, []);
    const all: Workflow[] = [];
    for await (const workflow of client.workflows.iterate({ limit: 1 })) all.push(workflow);
    assert.ok(all.some((workflow) => workflow.id === created.id));
    assert.equal(new Set(all.map((workflow) => workflow.id)).size, all.length);

    const error = await problem(client.workflows.cancel(created.id));
    assert.ok(error instanceof InvalidStateError);
    assert.equal(error.status, 409);
    assert.equal((await client.workflows.get(created.id)).status, "completed");
  } finally {
    await worker.stop();
  }
});

test("an idempotency key makes a repeat answer the original workflow; without one, two calls make two", async () => {
  const workflow = { name: "once", steps: [{ name: "only", task_name: "nobody-runs-this", queue_name: "idle" }] };
  const first = await client.workflows.create(workflow, { idempotencyKey: "wf-once" });
  const again = await client.workflows.create(workflow, { idempotencyKey: "wf-once" });
  assert.equal(again.id, first.id);
  const third = await client.workflows.create(workflow);
  const fourth = await client.workflows.create(workflow);
  assert.notEqual(third.id, fourth.id);
});

test("cancel stops a running workflow; cancelling it again is an invalid state", async () => {
  const workflow = await client.workflows.create({
    name: "doomed",
    steps: [
      { name: "first", task_name: "never", queue_name: "idle" },
      { name: "second", task_name: "never", queue_name: "idle", depends_on: ["first"] },
    ],
  });
  const cancelled = await client.workflows.cancel(workflow.id);
  assert.equal(cancelled.status, "cancelled");
  assert.deepEqual(
    cancelled.steps.map((step) => step.status),
    ["cancelled", "cancelled"],
  );
  assert.equal((await client.jobs.get(cancelled.steps[0]?.job_id ?? "")).status, "cancelled");
  const error = await problem(client.workflows.cancel(workflow.id));
  assert.ok(error instanceof InvalidStateError);
  assert.equal(error.code, "invalid_state");
  assert.deepEqual(
    (await client.workflows.list({ status: "cancelled" })).items.map((item) => item.id),
    [workflow.id],
  );
});

test("a cycle is a validation error that names its path", async () => {
  const error = await problem(
    client.workflows.create({
      name: "cycle",
      steps: [
        { name: "a", task_name: "t", depends_on: ["c"] },
        { name: "b", task_name: "t", depends_on: ["a"] },
        { name: "c", task_name: "t", depends_on: ["b"] },
      ],
    }),
  );
  assert.ok(error instanceof ValidationError);
  assert.equal(error.status, 400);
  assert.deepEqual(error.errors, [{ field: "steps.0.depends_on", message: "cycle: a → c → b → a" }]);
  assert.match(error.detail, /cycle: a → c → b → a/);
});

test("an unknown dependency or a duplicate step name is a validation error; nothing is created", async () => {
  const unknown = await problem(client.workflows.create({ name: "w", steps: [{ name: "a", task_name: "t", depends_on: ["ghost"] }] }));
  assert.ok(unknown instanceof ValidationError);
  assert.deepEqual(
    unknown.errors.map((field) => field.field),
    ["steps.0.depends_on.0"],
  );
  const duplicate = await problem(
    client.workflows.create({
      name: "w",
      steps: [
        { name: "a", task_name: "t" },
        { name: "a", task_name: "t" },
      ],
    }),
  );
  assert.ok(duplicate instanceof ValidationError);
  assert.deepEqual(
    duplicate.errors.map((field) => field.field),
    ["steps.1.name"],
  );
  for await (const workflow of client.workflows.iterate()) assert.notEqual(workflow.name, "w");
});

test("an unknown workflow, or another tenant's, is not found", async () => {
  const missing = "wf_00000000000000000000000000";
  await assert.rejects(client.workflows.get(missing), NotFoundError);
  await assert.rejects(client.workflows.cancel(missing), NotFoundError);

  const mine = await client.workflows.create({ name: "mine", steps: [{ name: "only", task_name: "never", queue_name: "idle" }] });
  const other = new QueueFlow({ baseUrl: server.url, apiKey: OTHER_API_KEY });
  await assert.rejects(other.workflows.get(mine.id), NotFoundError);
  await assert.rejects(other.workflows.cancel(mine.id), NotFoundError);
  assert.deepEqual((await other.workflows.list()).items, []);
  assert.equal((await client.workflows.get(mine.id)).status, "running");
});
