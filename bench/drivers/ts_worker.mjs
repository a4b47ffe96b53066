// `node [--expose-gc] bench/drivers/ts_worker.mjs [--heap-report PATH] URL WORKER_KEY QUEUE [CONCURRENCY]`: the
// TypeScript SDK's Worker with its default settings (but `concurrency`, when given) running a no-op task until
// SIGTERM. Needs the SDK built (`npm run build` in sdks/typescript).
//
// With --heap-report (which needs node's --expose-gc), each SIGUSR2 runs a full GC and writes the heap still in
// use after it (`heapUsed`, bytes) to PATH: sent once the bench's queue is drained, it is the worker's live heap
// then, what a per-job leak would grow, free of how large V8 keeps its young generation (bench/results/
// 2026-12-06-notes.md).
import { renameSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";

import { Worker } from "../../sdks/typescript/dist/index.js";

const { values, positionals } = parseArgs({
  options: { "heap-report": { type: "string" } },
  allowPositionals: true,
});
const [baseUrl, workerKey, queue, concurrency] = positionals;
const heapReport = values["heap-report"];
if (heapReport !== undefined && typeof globalThis.gc !== "function") {
  throw new Error("--heap-report needs node --expose-gc");
}

const worker = new Worker({
  baseUrl,
  workerKey,
  queues: [queue],
  ...(concurrency ? { concurrency: Number(concurrency) } : {}),
});
worker.task("noop", async () => null);
worker.stopOnSignals();
if (heapReport !== undefined) {
  process.on("SIGUSR2", () => {
    // Twice: what the first collection only finalized (weak references' and finalizers' targets) the second frees.
    globalThis.gc();
    globalThis.gc();
    writeFileSync(`${heapReport}.part`, String(process.memoryUsage().heapUsed));
    renameSync(`${heapReport}.part`, heapReport); // the bench polls for PATH: it never sees it half written
  });
}
await worker.start();
