import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { InvalidStateError, NotFoundError, QueueFlow, type Trigger, steps } from "../src/index.js";
import { API_KEY, type LiveServer, startServer } from "./live.js";

let server: LiveServer;
let client: QueueFlow;

before(async () => {
  server = await startServer();
  client = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY });
});
after(() => server.stop());

test("triggers round trip, and an event starts every one it matches, once per id", async () => {
  const receipt = await client.triggers.create({ name: "receipt", event: "order.paid", task: { task_name: "send_receipt" } });
  assert.match(receipt.id, /^trg_/);
  assert.equal(receipt.task?.task_name, "send_receipt");
  const fulfil = steps.workflow("fulfil", [steps.task("pack", "pack")]);
  await client.triggers.create({ name: "fulfil", event: "order.*", filter: { plan: "pro" }, workflow: fulfil });
  assert.deepEqual((await client.triggers.get("fulfil")).filter, { plan: "pro" });
  const all: Trigger[] = [];
  for await (const trigger of client.triggers.iterate({ limit: 1 })) all.push(trigger);
  assert.deepEqual(all.map((trigger) => trigger.name).sort(), ["fulfil", "receipt"]);

  const accepted = await client.events.send("order.paid", { order: 7, plan: "pro" }, { id: "order-7" });
  assert.equal(accepted.event_id, "order-7");
  assert.deepEqual(accepted.started.map((item) => item.trigger).sort(), ["fulfil", "receipt"]);
  const jobId = accepted.started.find((item) => item.trigger === "receipt")?.job_id;
  assert.ok(jobId);
  assert.ok(accepted.started.find((item) => item.trigger === "fulfil")?.workflow_id);
  const job = await client.jobs.get(jobId);
  assert.deepEqual(job.payload._event, { id: "order-7", name: "order.paid", payload: { order: 7, plan: "pro" } });
  assert.deepEqual(await client.events.send("order.paid", {}, { id: "order-7" }), accepted);

  const unnamed = await client.events.send("order.paid");
  assert.match(unnamed.event_id, /^qf-client-/);
  assert.deepEqual(unnamed.started.map((item) => item.trigger), ["receipt"]);

  assert.equal((await client.triggers.update("receipt", { enabled: false })).enabled, false);
  assert.deepEqual((await client.events.send("order.paid")).started, []);
  await client.triggers.delete("receipt");
  await assert.rejects(client.triggers.get("receipt"), NotFoundError);
  await assert.rejects(client.triggers.create({ name: "fulfil", event: "x", task: { task_name: "t" } }), InvalidStateError);
});
