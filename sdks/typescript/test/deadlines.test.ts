/**
 * Deadlines on an enqueue (README.md, "Deadlines"): `expires_at` or `expires_in_seconds` sent as given, one item's
 * of a batch too, and a job's `expires_at` read back. No server needed: a fake `fetch` answers as the server would.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { answering } from "./fakes.js";

const JOB = { id: "job_1", expires_at: "2031-01-01T00:00:00Z" };

test("a deadline is sent as given, per item of a batch too", async () => {
  const { client, sent } = answering(201, { jobs: [JOB, JOB] });
  await client.jobs.enqueueMany([
    { task_name: "a", expires_in_seconds: 90 },
    { task_name: "b", expires_at: "2031-01-01T00:00:00Z" },
  ]);
  const body = (await sent[0]!.json()) as { jobs: { expires_in_seconds?: number; expires_at?: string }[] };
  assert.equal(body.jobs[0]!.expires_in_seconds, 90);
  assert.equal(body.jobs[1]!.expires_at, "2031-01-01T00:00:00Z");
});

test("a job shows its deadline", async () => {
  const { client } = answering(200, JOB);
  assert.equal((await client.jobs.get("job_1")).expires_at, "2031-01-01T00:00:00Z");
});
