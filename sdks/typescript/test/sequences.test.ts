/**
 * `sequence` on an enqueue (README.md, "Sequences"): sent as given, a batch item's its own; the list filters by key;
 * `sequences.resume(key)` posts to its route (the key quoted whole) and a 409 is an `InvalidStateError`.
 * No server needed: a fake `fetch` records what would have been sent and answers as the server would.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { InvalidStateError } from "../src/index.js";
import { answering } from "./fakes.js";

const JOB = { id: "job_1", sequence_key: "account-7", blocked_by: null };

test("an enqueue and a batch item send their sequence as given", async () => {
  const { client, sent } = answering(201, JOB);
  await client.jobs.enqueue({ task_name: "post", sequence: { key: "account-7", on_failure: "halt" } });
  assert.deepEqual(((await sent[0]!.json()) as { sequence: unknown }).sequence, { key: "account-7", on_failure: "halt" });
  const batch = answering(201, { jobs: [JOB, JOB] });
  await batch.client.jobs.enqueueMany([{ task_name: "a", sequence: { key: "k" } }, { task_name: "b" }]);
  const body = (await batch.sent[0]!.json()) as { jobs: { sequence?: unknown }[] };
  assert.deepEqual(body.jobs[0]!.sequence, { key: "k" });
  assert.equal(body.jobs[1]!.sequence, undefined);
});

test("the list filters by sequence key", async () => {
  const { client, sent } = answering(200, { items: [], next_cursor: null });
  await client.jobs.list({ sequence_key: "account-7" });
  assert.equal(new URL(sent[0]!.url).searchParams.get("sequence_key"), "account-7");
});

test("resume posts to the sequence's route and answers it", async () => {
  const { client, sent } = answering(200, { key: "account/7", blocked_by: null });
  assert.deepEqual(await client.sequences.resume("account/7"), { key: "account/7", blocked_by: null });
  assert.equal(sent[0]!.method, "POST");
  assert.equal(new URL(sent[0]!.url).pathname, "/v1/sequences/account%2F7/resume");
});

test("409 when nothing blocks the sequence is an InvalidStateError", async () => {
  const problem = { type: "about:blank", title: "Conflict", status: 409, detail: "nothing blocks sequence 'k'",
                    code: "invalid_state" };
  const { client } = answering(409, problem);
  const error = await client.sequences.resume("k").catch((e: unknown) => e);
  assert.ok(error instanceof InvalidStateError, String(error));
});
