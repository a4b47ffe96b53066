/**
 * `Worker`: leases jobs from the worker routes and runs them with registered task handlers.
 *
 * It wires three parts (worker/): the loop (`loop.ts`: slots, prefetch, batched acks and heartbeats, draining;
 * its comment says how, and which module of its own each is), the worker routes it leases from (`httpSource.ts`, `POST /v1/worker/lease`, `/ack` and
 * `/heartbeat`), and what a handler gets (`context.ts`). At most `concurrency` handlers run at once; more jobs
 * are leased ahead so a free slot never waits for a round trip; outcomes and heartbeats go in batches. A job
 * whose outcome was still waiting in a batch when the process died is delivered again once its lease expires
 * (at-least-once).
 *
 * Each running job has an `AbortSignal` that fires when the lease is lost (the job was cancelled, or the
 * lease expired), when its deadline passes, or when the worker stops past its grace period. A handler's
 * return value completes the job; a thrown error fails it, and its stack is stored in the job's `error_message`
 * (the one-line summary first, at most 64 KiB).
 *
 * It leases only the tasks it has handlers for (`task_names`), so workers with different tasks can share a
 * queue; a job of another task that arrives anyway is dead-lettered and its task named once in a warning.
 *
 * It says what it does through `logger` (default `console`): a startup line (worker id, queues, tasks,
 * concurrency), every failure with its stack (warn), stopping; and with `logJobs`, one line per job (task, job
 * id, delivery, outcome, duration). A key the server refuses (401, 403) is not retried: the worker stops, logs
 * one error, and the promise of `start()` rejects with it.
 *
 * The defaults are the Python SDK's: concurrency 10, a 20 s long-poll, a 30 s lease and grace period, acks in
 * batches of 100 or after 10 ms.
 */

import { hostname } from "node:os";

import type { WorkerLogger } from "./outcomes.js";
import type { TaskDefinition } from "./tasks.js";
import type { LeasedJob } from "./types.js";
import { LocalLease, type TaskContext, type TaskHandler, localContext } from "./worker/context.js";
import { HttpSource } from "./worker/httpSource.js";
import { MAX_BATCH, WorkerLoop } from "./worker/loop.js";

export { FatalError, RetryError } from "./outcomes.js";
export { DeadlineError, ShutdownError } from "./worker/context.js";
export type { TaskContext, TaskHandler } from "./worker/context.js";
export type { WorkerLogger } from "./outcomes.js";

export interface WorkerOptions {
  /** Where the server listens, e.g. `http://127.0.0.1:8000`. */
  baseUrl: string;
  /** A worker key; omit against a development-mode server. */
  workerKey?: string | undefined;
  /** The queues to drain, e.g. `["default"]`. */
  queues: string[];
  /** The most handlers running at once (default 10). */
  concurrency?: number | undefined;
  /**
   * How many jobs to lease ahead of free slots; default: adaptive (see worker/leasing.ts), at most 500. Either way no
   * more than the slots start within half a lease and half the shortest timeout lately leased.
   */
  prefetch?: number | undefined;
  /** Send outcomes once this many are ready (default 100, at most 1000) … */
  ackBatch?: number | undefined;
  /** … or this long after the first one was (default 10 ms). */
  ackIntervalMs?: number | undefined;
  /** How long each lease and heartbeat extends the job's lock (default 30 s). */
  leaseSeconds?: number | undefined;
  /** Seconds between heartbeats (default a third of `leaseSeconds`). */
  heartbeatSeconds?: number | undefined;
  /**
   * How long one lease call long-polls when nothing is claimable (0–60, default 1; work wakes it at once). Short,
   * because `stop()` lets a poll answer rather than cut it: an answer on its way would strand its jobs.
   */
  waitSeconds?: number | undefined;
  /** How long `stop()` lets running jobs finish before aborting their signals and releasing them (default 30 000 ms). */
  shutdownGraceMs?: number | undefined;
  /** Shown in the server's lease records (default `hostname:pid`). */
  workerId?: string | undefined;
  timeoutMs?: number | undefined;
  maxRetries?: number | undefined;
  /**
   * Send every call through this `fetch`. Without it, lease, ack and heartbeat go over `node:http` on a keep-alive
   * agent (Node's fetch leaves per-call garbage that a busy worker turns into tens of MB of RSS).
   */
  fetch?: typeof globalThis.fetch | undefined;
  /** Told about failures the worker survives (a lease call that failed, a lost heartbeat); default `console.error`. */
  onError?: ((error: unknown, job?: LeasedJob) => void) | undefined;
  /** Where the worker's lines go: startup, stopping, failures with their stack (default `console`). */
  logger?: WorkerLogger | undefined;
  /** Also log one line per job that completes or asks to retry (default false: a busy worker runs thousands a second). */
  logJobs?: boolean | undefined;
}

export class Worker {
  /** The default of each setting: the same as the Python SDK's `Worker` (its names in snake_case, in seconds). */
  static readonly defaults = Object.freeze({
    concurrency: 10,
    waitSeconds: 1,
    leaseSeconds: 30,
    shutdownGraceMs: 30_000,
    ackBatch: 100,
    ackIntervalMs: 10,
  });

  readonly #handlers = new Map<string, TaskHandler<never>>();
  readonly #loop: WorkerLoop;
  readonly #queues: string[];
  readonly #workerId: string;
  readonly #logger: WorkerLogger;
  /** The sizes of the last 1,000 acks sent (at least), oldest first (for tests and metrics). */
  readonly ackBatches: number[];

  constructor(options: WorkerOptions) {
    if (options.queues.length === 0) throw new TypeError("queues must name at least one queue");
    const defaults = Worker.defaults;
    const concurrency = options.concurrency ?? defaults.concurrency;
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new TypeError("concurrency must be a positive integer");
    if (options.prefetch !== undefined && (!Number.isInteger(options.prefetch) || options.prefetch < 0)) {
      throw new TypeError("prefetch must be a whole number, at least 0");
    }
    const leaseSeconds = options.leaseSeconds ?? defaults.leaseSeconds;
    this.#queues = [...options.queues];
    this.#workerId = options.workerId ?? `${hostname()}:${process.pid}`;
    this.#logger = options.logger ?? console;
    const source = new HttpSource(
      { baseUrl: options.baseUrl, token: options.workerKey, timeoutMs: options.timeoutMs, maxRetries: options.maxRetries, fetch: options.fetch },
      {
        queues: this.#queues,
        leaseSeconds,
        waitSeconds: options.waitSeconds ?? defaults.waitSeconds,
        workerId: this.#workerId,
        taskNames: () => [...this.#handlers.keys()],
      },
    );
    this.#loop = new WorkerLoop(source, this.#handlers, {
      concurrency,
      prefetch: options.prefetch,
      shutdownGraceMs: options.shutdownGraceMs ?? defaults.shutdownGraceMs,
      ackBatch: Math.max(1, Math.min(options.ackBatch ?? defaults.ackBatch, MAX_BATCH)),
      ackIntervalMs: options.ackIntervalMs ?? defaults.ackIntervalMs,
      leaseMs: leaseSeconds * 1000,
      heartbeatMs: (options.heartbeatSeconds ?? leaseSeconds / 3) * 1000,
      workerId: this.#workerId,
      queues: this.#queues,
      onError: options.onError ?? ((error, job) => console.error(`queueflow worker${job ? ` (job ${job.id})` : ""}:`, error)),
      logger: this.#logger,
      logJobs: options.logJobs ?? false,
    });
    this.ackBatches = this.#loop.ackBatches;
  }

  /**
   * Register the handler for a task, by name or by its `defineTask` definition (then the payload and the result
   * are the definition's types); its return value (JSON) becomes the job's `result`.
   */
  task<P extends object, R>(
    task: TaskDefinition<P, R>,
    handler: (payload: NoInfer<P>, ctx: TaskContext) => NoInfer<R> | Promise<NoInfer<R>>,
  ): this;
  task<P = Record<string, unknown>>(taskName: string, handler: TaskHandler<P>): this;
  task(task: string | TaskDefinition<object, unknown>, handler: TaskHandler<never>): this {
    this.#handlers.set(typeof task === "string" ? task : task.name, handler);
    return this;
  }

  /**
   * Run the handler of `taskName` once on `payload`, in-process and without a server, as the worker would (for
   * tests): the payload goes through JSON first, `ctx.job` is a running job made of `job`'s fields over
   * defaults, `ctx.signal` never aborts, `ctx.progress` answers true and `ctx.addSteps` answers its steps as pending
   * ones (the job must be a workflow step: `{ workflow_step_id: "split" }`), both recorded on `lease` for the test to
   * assert (`lease.addedSteps`, `lease.progressReports`). Resolves with the result as the job would store it (through
   * JSON); what the handler throws (`RetryError`, `FatalError`, any error) rejects.
   */
  async runLocal(
    taskName: string,
    payload: Record<string, unknown> = {},
    job: Partial<LeasedJob> = {},
    lease: LocalLease = new LocalLease(),
  ): Promise<unknown> {
    const handler = this.#handlers.get(taskName);
    if (!handler) {
      throw new TypeError(`no handler for task ${JSON.stringify(taskName)} (it has: ${[...this.#handlers.keys()].sort().join(", ")})`);
    }
    const sent = JSON.parse(JSON.stringify(payload)) as Record<string, unknown>;
    const result = await handler(sent as never, localContext(taskName, this.#queues[0] ?? "default", sent, job, lease));
    return JSON.parse(JSON.stringify(result === undefined ? null : result)) as unknown;
  }

  /** How many jobs this worker holds right now: running, or leased ahead and waiting for a slot. */
  get activeJobs(): number {
    return this.#loop.activeJobs;
  }

  /** How many handlers run right now. */
  get runningJobs(): number {
    return this.#loop.runningJobs;
  }

  /**
   * Start leasing. The promise resolves once the worker has stopped and every held job is settled,
   * so a script can `await worker.start()`; a service can ignore it and `await worker.stop()` later.
   */
  start(): Promise<void> {
    return this.#loop.start();
  }

  /**
   * Stop gracefully: lease nothing more (a long-poll parked for work is cut; a lease whose answer may be on its
   * way is let to arrive), release at once every held job not started and whatever a lease in flight brings (no
   * retry counted), let the running ones finish (up to `shutdownGraceMs`) and record their outcomes, then abort
   * the signals of the ones still running and release their jobs for another worker.
   */
  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** Stop now: what still runs is aborted and released, as when the grace period ends. */
  quit(): void {
    this.#loop.quit();
  }

  /**
   * Stop gracefully on SIGTERM/SIGINT (saying how many jobs it finishes), and quit at once on a second one;
   * returns a function that removes the handlers again.
   */
  stopOnSignals(signals: NodeJS.Signals[] = ["SIGTERM", "SIGINT"]): () => void {
    let received = 0;
    const dispose = () => {
      for (const signal of signals) process.removeListener(signal, onSignal);
    };
    const onSignal = (signal: NodeJS.Signals) => {
      received += 1;
      if (received === 1) {
        this.#logger.info(`worker ${this.#workerId}: ${signal}: stopping`);
        // Once stopped, a signal does what it would without the worker again.
        this.#loop
          .stop(" (Ctrl-C again to quit)")
          .catch(() => undefined) // a failure is start()'s to report
          .finally(dispose);
      } else {
        this.#logger.warn(`worker ${this.#workerId}: ${signal} again: quitting now`);
        this.quit();
      }
    };
    for (const signal of signals) process.on(signal, onSignal);
    return dispose;
  }
}
