/**
 * Workflows written as code (`steps`), and `ctx.addSteps`: what a step builder makes, what the loop sends to its
 * source under the job's lease, and what `runLocal` records. The routes themselves run against a live server in
 * grow.test.ts.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { ArgumentError, InvalidStateError, LeaseLostError, LocalLease, ValidationError, Worker, steps } from "../src/index.js";
import { leased, scriptedLoop, settle } from "./fakes.js";

test("a task step is the API's step with its job options; dependencies are given by step or by name", () => {
  const split = steps.task("split", "split_rows", { rows: 3 }, { queue_name: "etl", priority: 2 });
  const reduce = steps.task("reduce", "sum", {}, { depends_on: [split], on_failure: "skip", timeout_seconds: 30 });
  assert.deepEqual(split, {
    name: "split",
    task_name: "split_rows",
    payload: { rows: 3 },
    depends_on: [],
    on_failure: "halt",
    queue_name: "etl",
    priority: 2,
  });
  assert.deepEqual(reduce, { name: "reduce", task_name: "sum", payload: {}, depends_on: ["split"], on_failure: "skip", timeout_seconds: 30 });
});

test("a child step carries its workflow's definition and no job field; a definition may carry a deadline", () => {
  const parcel = steps.workflow("parcel", [steps.task("pack", "pack")], { context: { parcel: 1 }, timeout_seconds: 600 });
  assert.deepEqual(steps.child("ship", parcel, { depends_on: ["charge"] }), {
    name: "ship",
    depends_on: ["charge"],
    on_failure: "halt",
    workflow: {
      name: "parcel",
      context: { parcel: 1 },
      steps: [{ name: "pack", task_name: "pack", payload: {}, depends_on: [], on_failure: "halt" }],
      timeout_seconds: 600,
    },
  });
  assert.equal(steps.workflow("w", []).timeout_seconds, undefined);
  assert.throws(() => steps.child("ship", null as never), ArgumentError);
});

test("wait steps carry their wait and no job field; required_by only when given", () => {
  assert.deepEqual(steps.signal("approval", { timeout_seconds: 3600, depends_on: ["draft"] }), {
    name: "approval",
    depends_on: ["draft"],
    on_failure: "halt",
    wait: { signal: "approval", timeout_seconds: 3600 },
  });
  assert.deepEqual(steps.signal("approved", { signal: "approval" }).wait, { signal: "approval" });
  assert.deepEqual(steps.sleep("cool_off", 259200, { on_failure: "continue" }), {
    name: "cool_off",
    depends_on: [],
    on_failure: "continue",
    wait: { seconds: 259200 },
  });
  assert.deepEqual(steps.task("map_0", "double", { row: 1 }, { required_by: ["reduce"] }).required_by, ["reduce"]);
  assert.equal("required_by" in steps.task("map_0", "double"), false);
});

test("a workflow definition is the create body; a name given twice is refused before any request", () => {
  const draft = steps.task("draft", "write");
  assert.deepEqual(steps.workflow("review", [draft, steps.signal("ok", { depends_on: [draft] })], { context: { doc: 7 } }), {
    name: "review",
    context: { doc: 7 },
    steps: [
      { name: "draft", task_name: "write", payload: {}, depends_on: [], on_failure: "halt" },
      { name: "ok", depends_on: ["draft"], on_failure: "halt", wait: { signal: "ok" } },
    ],
  });
  assert.throws(() => steps.workflow("w", [steps.task("a", "t"), steps.sleep("a", 1)]), (error) => error instanceof ArgumentError && /more than once: a/.test(error.message));
  assert.throws(() => steps.task("b", "t", {}, { depends_on: "a" as never }), ArgumentError);
});

function splitter(): Worker {
  const worker = new Worker({ baseUrl: "http://127.0.0.1:1", workerKey: "k", queues: ["default"] });
  worker.task<{ rows: number[] }>("split", async (payload, ctx) => {
    await ctx.addSteps(payload.rows.map((row, i) => steps.task(`map_${i}`, "double", { row }, { required_by: ["reduce"] })));
    return payload.rows.length;
  });
  return worker;
}

test("runLocal records the steps a handler adds, answering them as pending steps added by the step", async () => {
  const lease = new LocalLease();
  assert.equal(await splitter().runLocal("split", { rows: [4, 5] }, { workflow_step_id: "split" }, lease), 2);
  assert.deepEqual(lease.addedSteps, [
    { name: "map_0", task_name: "double", payload: { row: 4 }, depends_on: [], on_failure: "halt", required_by: ["reduce"] },
    { name: "map_1", task_name: "double", payload: { row: 5 }, depends_on: [], on_failure: "halt", required_by: ["reduce"] },
  ]);
  assert.equal(lease.job?.workflow_id, "wf_local");
});

test("runLocal refuses addSteps outside a workflow step, a name given twice, and one added earlier in the run", async () => {
  await assert.rejects(splitter().runLocal("split", { rows: [1] }), InvalidStateError);
  const worker = new Worker({ baseUrl: "http://127.0.0.1:1", workerKey: "k", queues: ["default"] });
  worker.task("twice", async (_payload, ctx) => ctx.addSteps([steps.task("x", "t"), steps.task("x", "t")]));
  worker.task("again", async (_payload, ctx) => {
    await ctx.addSteps([steps.task("x", "t")]);
    await ctx.addSteps([steps.task("x", "t")]);
  });
  await assert.rejects(worker.runLocal("twice", {}, { workflow_step_id: "s" }), ArgumentError);
  const lease = new LocalLease();
  await assert.rejects(worker.runLocal("again", {}, { workflow_step_id: "s" }, lease), ValidationError);
  assert.deepEqual(
    lease.addedSteps.map((step) => step.name),
    ["x"],
  );
});

test("ctx.addSteps goes to the source under the job's lease; a lost lease rejects and aborts the signal", async () => {
  const lost = new LeaseLostError(409, "lease_lost", "the workflow was cancelled");
  const answers: unknown[] = [];
  const s = scriptedLoop([leased("a", { workflow_id: "wf_1", workflow_step_id: "split" })], {
    t: async (_payload, ctx) => {
      answers.push((await ctx.addSteps([steps.sleep("nap", 5)])).map((step) => [step.name, step.status, step.added_by]));
      s.source.addStepsError = lost;
      answers.push(await ctx.addSteps([steps.sleep("nap2", 5)]).catch((error: unknown) => error));
      answers.push(await ctx.addSteps([steps.sleep("nap3", 5)]).catch((error: unknown) => error instanceof LeaseLostError));
      answers.push(ctx.signal.reason);
    },
  });
  const stopped = s.loop.start();
  await settle();
  await s.loop.stop();
  await stopped;
  assert.deepEqual(answers, [[["nap", "pending", "split"]], lost, true, lost]);
  assert.deepEqual(
    s.source.added.map(([id, token, added]) => [id, token, added.map((step) => step.name)]),
    [
      ["a", "a-1", ["nap"]],
      ["a", "a-1", ["nap2"]],
    ],
  );
});
