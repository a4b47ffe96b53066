import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { APIError, InvalidStateError, NotFoundError, QueueFlow, type Schedule, ValidationError } from "../src/index.js";
import { API_KEY, type LiveServer, OTHER_API_KEY, startServer } from "./live.js";

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

test("create, get, list, iterate, update and delete a schedule", async () => {
  const created = await client.schedules.create({
    name: "nightly",
    cron: "0 3 * * *",
    timezone: "Europe/Berlin",
    task_name: "report",
    payload: { format: "pdf" },
  });
  assert.match(created.id, /^sch_/);
  assert.equal(created.tenant_id, "tenant-a");
  assert.equal(created.enabled, true);
  assert.equal(created.queue_name, "default");
  assert.equal(created.last_run_at, null);
  assert.ok(created.next_run_at);
  assert.equal(created.updated_at, created.created_at);

  assert.deepEqual(await client.schedules.get("nightly"), created);
  const hourly = await client.schedules.create({ name: "hourly", cron: "@hourly", task_name: "ping" });
  assert.equal(hourly.timezone, "UTC");

  const page = await client.schedules.list({ limit: 1 });
  assert.deepEqual(
    page.items.map((schedule) => schedule.name),
    ["hourly"],
  );
  assert.ok(page.next_cursor);
  const all: Schedule[] = [];
  for await (const schedule of client.schedules.iterate({ limit: 1 })) all.push(schedule);
  assert.deepEqual(
    all.map((schedule) => schedule.name),
    ["hourly", "nightly"],
  );

  // PATCH takes only the fields to change; the others stay as they were.
  const updated = await client.schedules.update("nightly", { cron: "30 4 * * *", enabled: false });
  assert.equal(updated.id, created.id);
  assert.equal(updated.cron, "30 4 * * *");
  assert.equal(updated.enabled, false);
  assert.equal(updated.next_run_at, null);
  assert.equal(updated.task_name, "report");
  assert.equal(updated.timezone, "Europe/Berlin");
  assert.deepEqual(updated.payload, { format: "pdf" });
  assert.ok(updated.updated_at > created.updated_at);
  const enabled = await client.schedules.update("nightly", { enabled: true });
  assert.equal(enabled.cron, "30 4 * * *");
  assert.ok(enabled.next_run_at);

  // DELETE answers 204: the promise resolves to nothing.
  assert.equal(await client.schedules.delete("nightly"), undefined);
  await assert.rejects(client.schedules.get("nightly"), NotFoundError);
  await assert.rejects(client.schedules.delete("nightly"), NotFoundError);
  assert.deepEqual(
    (await client.schedules.list()).items.map((schedule) => schedule.name),
    ["hourly"],
  );
});

test("a taken name is a 409 invalid state", async () => {
  await client.schedules.create({ name: "taken", cron: "* * * * *", task_name: "t" });
  const error = await problem(client.schedules.create({ name: "taken", cron: "@daily", task_name: "other" }));
  assert.ok(error instanceof InvalidStateError);
  assert.equal(error.status, 409);
  assert.equal(error.code, "invalid_state");
  assert.equal((await client.schedules.get("taken")).task_name, "t");
});

test("a bad cron or time zone is a validation error naming the fields", async () => {
  const error = await problem(client.schedules.create({ name: "bad", cron: "not a cron", timezone: "Mars/Base", task_name: "t" }));
  assert.ok(error instanceof ValidationError);
  assert.equal(error.status, 400);
  assert.deepEqual(
    error.errors.map((field) => field.field),
    ["cron", "timezone"],
  );
  await assert.rejects(client.schedules.get("bad"), NotFoundError);

  await client.schedules.create({ name: "fixable", cron: "@daily", task_name: "t" });
  const patch = await problem(client.schedules.update("fixable", { cron: "61 * * * *" }));
  assert.ok(patch instanceof ValidationError);
  assert.deepEqual(
    patch.errors.map((field) => field.field),
    ["cron"],
  );
  assert.equal((await client.schedules.get("fixable")).cron, "@daily");
});

test("an unknown schedule, or another tenant's, is not found", async () => {
  await assert.rejects(client.schedules.get("missing"), NotFoundError);
  await assert.rejects(client.schedules.update("missing", { enabled: false }), NotFoundError);
  await assert.rejects(client.schedules.delete("missing"), NotFoundError);

  await client.schedules.create({ name: "mine", cron: "@daily", task_name: "t" });
  const other = new QueueFlow({ baseUrl: server.url, apiKey: OTHER_API_KEY });
  await assert.rejects(other.schedules.get("mine"), NotFoundError);
  await assert.rejects(other.schedules.update("mine", { enabled: false }), NotFoundError);
  await assert.rejects(other.schedules.delete("mine"), NotFoundError);
  assert.deepEqual((await other.schedules.list()).items, []);
  assert.equal((await client.schedules.get("mine")).enabled, true);
});
