// node tests/chaos/ts_worker.mjs BASE_URL WORKER_KEY QUEUES CONCURRENCY LEASE_SECONDS JOURNAL
//
// A TypeScript SDK worker (sdks/typescript, built into dist/) running the chaos task, the same behaviours as
// tests/chaos/tasks.py. Node 20 has no SQLite, so it appends its ledger rows to JOURNAL as JSON lines (one
// appendFileSync each: a SIGKILL loses nothing written); the checks load them into the ledger. What the
// server acknowledged is read off the worker's own fetch: the answer to each item of its batched acks.
import { appendFileSync } from "node:fs";
import { createHash, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { FatalError, RetryError, Worker } from "../../sdks/typescript/dist/index.js";

const [baseUrl, workerKey, queues, concurrency, leaseSeconds, journal] = process.argv.slice(2);
const TIMEOUT_MS = 2000;

function record(table, row) {
  appendFileSync(journal, JSON.stringify({ table, ...row, pid: process.pid, at: Date.now() / 1000 }) + "\n");
}

// tests/chaos/tasks.py's draw, to the bit: the checks tell the deliveries that overran on purpose by it.
function draw(jobId, delivery) {
  return createHash("sha256").update(`${jobId}:${delivery}`).digest().readUInt32BE(0) / 2 ** 32;
}

const ACK = "/v1/worker/ack";

async function observed(input, init) {
  const request = input instanceof Request ? input : new Request(input, init);
  const acking = new URL(request.url).pathname === ACK;
  const body = acking ? JSON.parse(await request.clone().text()) : undefined;
  const response = await fetch(request);
  if (acking) {
    // The worker records outcomes in batches: one ledger row per item, acked when the server answered it "ok".
    // The answer lists the completions' results, then the failures', in order: matched by position, since one
    // batch may hold two deliveries of one job.
    const answered = response.status === 200 ? (await response.clone().json()).results : [];
    const acked = answered.map((result) => (result.outcome === "ok" ? 1 : 0));
    const complete = body.complete ?? [];
    for (const [index, item] of complete.entries()) {
      record("outcomes", { job_id: item.id, kind: "complete", nonce: item.result?.nonce ?? null, acked: acked[index] ?? 0 });
    }
    for (const [index, item] of (body.fail ?? []).entries()) {
      record("outcomes", { job_id: item.id, kind: "fail", nonce: null, acked: acked[complete.length + index] ?? 0 });
    }
  }
  return response;
}

const worker = new Worker({
  baseUrl,
  workerKey,
  queues: queues.split(","),
  concurrency: Number(concurrency),
  leaseSeconds: Number(leaseSeconds),
  fetch: observed,
  onError: () => {},
});

worker.task("chaos", async (payload, { job, signal }) => {
  const nonce = randomUUID().replaceAll("-", "");
  record("executions", { job_id: job.id, delivery: job.delivery_count, nonce });
  try {
    if (payload.ms) await sleep(payload.ms, undefined, { signal }); // the task's own work
    const roll = draw(job.id, job.delivery_count);
    if (roll < 0.07) throw new Error("chaos: this delivery raised");
    if (roll < 0.12) throw new RetryError(0.1, "chaos: asked to retry");
    if (roll < 0.14 && job.delivery_count === 1) await sleep(TIMEOUT_MS + 1000, undefined, { signal });
    if (roll < 0.15) throw new FatalError("chaos: failed for good");
    return { nonce };
  } finally {
    // A job of a sequence: when each execution ended (tests/chaos/checks.py, sequence_violations).
    if (payload.seq) record("returns", { job_id: job.id, delivery: job.delivery_count, nonce });
  }
});
worker.stopOnSignals();
const running = worker.start();
console.error("chaos ts worker: leasing from", queues);
await running;
