/** `HttpSource.release` against a live server: held jobs handed back are claimable again at once, uncounted. */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { QueueFlow } from "../src/index.js";
import { HttpSource } from "../src/worker/httpSource.js";
import { API_KEY, type LiveServer, WORKER_KEY, startServer } from "./live.js";

let server: LiveServer;
let client: QueueFlow;

before(async () => {
  server = await startServer();
  client = new QueueFlow({ baseUrl: server.url, apiKey: API_KEY });
});
after(() => server.stop());

test("release hands back each held job on its own, and the next lease gets it as its first delivery", async () => {
  const enqueued = await client.jobs.enqueue({ task_name: "t", queue_name: "released" });
  const source = new HttpSource(
    { baseUrl: server.url, token: WORKER_KEY },
    { queues: ["released"], leaseSeconds: 30, waitSeconds: 0, workerId: "w", taskNames: () => ["t"] },
  );
  try {
    const [job] = await source.lease(1, new AbortController().signal);
    assert.ok(job);
    const released = await source.release([
      [job.id, "stale"],
      [job.id, job.lease_token],
      [job.id, job.lease_token],
    ]);
    assert.deepEqual(released, [false, true, false]);
    assert.equal((await client.jobs.get(enqueued.id)).status, "pending");
    const [again] = await source.lease(1, new AbortController().signal);
    assert.equal(again?.id, enqueued.id);
    assert.equal(again?.delivery_count, 1);
  } finally {
    source.close();
  }
});
