/**
 * An SDK reading a server newer than itself (docs/compatibility.md, "SDKs tolerate evolution"): fields it does not
 * know are kept on the object as sent, enum values it does not know (a new status) pass through as the strings
 * they are, and nothing throws. A `fetch` that answers what a newer server would; no server.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { QueueFlow } from "../src/index.js";

const NEWER = { a_field_from_the_future: { nested: [1, 2] } };
const JOB = {
  id: "job_1", tenant_id: "default", queue_name: "default", task_name: "t", payload: {}, status: "archived",
  priority: 0, scheduled_at: "2026-03-01T12:00:00Z", locked_until: null, delivery_count: 0, retry_count: 0,
  max_retries: 3, backoff: { strategy: "decorrelated", base_seconds: 1, max_seconds: 3600, jitter: true },
  timeout_seconds: null, next_retry_at: null, result: null, error_message: null, workflow_id: null,
  workflow_step_id: null, metadata: {}, idempotency_key: null, created_at: "2026-03-01T12:00:00Z", started_at: null,
  completed_at: null, progress: null, trace_context: null, concurrency_key: null, ...NEWER,
};

function answering(body: unknown): QueueFlow {
  const fetch = async () => new Response(JSON.stringify(body), { status: 200, headers: { "Content-Type": "application/json" } });
  return new QueueFlow({ baseUrl: "http://queueflow.test", apiKey: "k", fetch });
}

test("a job from a newer server reads, its unknown status and fields kept", async () => {
  const job = await answering(JOB).jobs.get("job_1");
  assert.equal(job.status, "archived");
  assert.equal(job.backoff.strategy, "decorrelated");
  assert.deepEqual((job as unknown as typeof NEWER).a_field_from_the_future, NEWER.a_field_from_the_future);
});

test("a workflow from a newer server reads, with a step status the SDK does not know", async () => {
  const step = { name: "approve", task_name: "t", status: "sleeping", job_id: null, depends_on: [], on_failure: "halt", ...NEWER };
  const workflow = {
    id: "wf_1", tenant_id: "default", name: "w", status: "suspended", context: {}, steps: [step],
    created_at: "2026-03-01T12:00:00Z", completed_at: null, ...NEWER,
  };
  const read = await answering(workflow).workflows.get("wf_1");
  assert.equal(read.status, "suspended");
  assert.equal(read.steps[0]?.status, "sleeping");
});
