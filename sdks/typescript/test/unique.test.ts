/**
 * `unique` on an enqueue (README.md, "Unique jobs and debounce"): sent as given, one item's rule of a batch too; a 409 `duplicate`
 * is a `DuplicateError` with the existing job's id (and, in a batch, the item's index); the list filters by key.
 * No server needed: a fake `fetch` records what would have been sent and answers as the server would.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { DuplicateError, InvalidStateError, LeaseLostError } from "../src/index.js";
import { answering } from "./fakes.js";

const JOB = { id: "job_1", unique_key: "customer-1" };

test("an enqueue sends its unique rule as given", async () => {
  const { client, sent } = answering(201, JOB);
  const rule = { key: "hook", on_conflict: "replace" as const, debounce_seconds: 5, debounce_max_seconds: 60 };
  await client.jobs.enqueue({ task_name: "hook", unique: rule });
  assert.deepEqual(((await sent[0]!.json()) as { unique: unknown }).unique, rule);
});

test("a batch item's rule is its own", async () => {
  const { client, sent } = answering(201, { jobs: [JOB, JOB] });
  await client.jobs.enqueueMany([{ task_name: "a", unique: { key: "k", states: ["completed"] } }, { task_name: "b" }]);
  const body = (await sent[0]!.json()) as { jobs: { unique?: unknown }[] };
  assert.deepEqual(body.jobs[0]!.unique, { key: "k", states: ["completed"] });
  assert.equal(body.jobs[1]!.unique, undefined);
});

test("409 duplicate is a DuplicateError with the existing job and the item's index", async () => {
  const problem = { type: "about:blank", title: "Conflict", status: 409, detail: "jobs.2: a job with this unique key exists",
                    code: "duplicate", existing_job_id: "job_0", index: 2 };
  const { client } = answering(409, problem);
  const error = await client.jobs.enqueueMany([{ task_name: "a" }]).catch((e: unknown) => e);
  assert.ok(error instanceof DuplicateError, String(error));
  assert.ok(!(error instanceof InvalidStateError) && !(error instanceof LeaseLostError));
  assert.equal(error.existingJobId, "job_0");
  assert.equal(error.index, 2);
});

test("the list filters by unique key", async () => {
  const { client, sent } = answering(200, { items: [], next_cursor: null });
  await client.jobs.list({ unique_key: "customer-1" });
  assert.equal(new URL(sent[0]!.url).searchParams.get("unique_key"), "customer-1");
});
