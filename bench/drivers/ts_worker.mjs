// `node bench/drivers/ts_worker.mjs URL WORKER_KEY QUEUE [CONCURRENCY]`: the TypeScript SDK's Worker with its
// default settings (but `concurrency`, when given) running a no-op task until SIGTERM. Needs the SDK built
// (`npm run build` in sdks/typescript).
import { Worker } from "../../sdks/typescript/dist/index.js";

const [baseUrl, workerKey, queue, concurrency] = process.argv.slice(2);
const worker = new Worker({
  baseUrl,
  workerKey,
  queues: [queue],
  ...(concurrency ? { concurrency: Number(concurrency) } : {}),
});
worker.task("noop", async () => null);
worker.stopOnSignals();
await worker.start();
