/**
 * A queue's `retention_seconds` (README.md, "Retention"): `queues.update` sends it as given, `null` too (the queue's
 * own retention removed: the server's `--retention-hours` applies); a queue read back carries it, and one from a server
 * older than the field reads without it. No server needed: a fake `fetch` records what would have been sent.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { QueueFlow, type Queue } from "../src/index.js";

const COUNTS = { pending: 0, scheduled: 0, running: 0, retrying: 0, completed: 0, dead_letter: 0, cancelled: 0 };
const SETTINGS = { paused: false, concurrency_limit: null, key_concurrency_limit: null, rate_limit: null };

function answering(body: unknown): { client: QueueFlow; sent: Request[] } {
  const sent: Request[] = [];
  const fetch = async (input: string | URL | Request): Promise<Response> => {
    sent.push(input as Request);
    return new Response(JSON.stringify(body), { status: 200, headers: { "content-type": "application/json" } });
  };
  return { client: new QueueFlow({ baseUrl: "http://queueflow.test", fetch, maxRetries: 0 }), sent };
}

test("update sends the retention as given, and null as null", async () => {
  const queue = { name: "reports", ...COUNTS, oldest_pending_age_seconds: null, ...SETTINGS, retention_seconds: 604800 };
  const { client, sent } = answering(queue);
  const updated = await client.queues.update("reports", { retention_seconds: 604800 });
  assert.equal(updated.retention_seconds, 604800);
  await client.queues.update("reports", { retention_seconds: null });
  assert.equal(sent[0]!.method, "PATCH");
  assert.equal(new URL(sent[0]!.url).pathname, "/v1/queues/reports");
  assert.deepEqual(await sent[0]!.json(), { retention_seconds: 604800 });
  assert.deepEqual(await sent[1]!.json(), { retention_seconds: null });
});

test("a queue from a server without the field reads without it", async () => {
  const { client } = answering({ name: "old", ...COUNTS, oldest_pending_age_seconds: null, ...SETTINGS });
  const queue: Queue = await client.queues.get("old");
  assert.equal(queue.retention_seconds, undefined);
});
