/**
 * `Worker`: leases jobs from the worker routes and runs them with registered task handlers.
 *
 * At most `concurrency` handlers run at once, and more jobs are leased ahead and wait their turn, so a free
 * slot never waits for a round trip: by default as many as the slots get through in two lease round trips
 * (task durations and round trips are measured), at most 700 — short tasks are claimed by the hundred, long
 * ones hardly ahead at all. Outcomes are recorded in batches (`POST /v1/worker/ack`) sent when `ackBatch` are
 * ready or `ackIntervalMs` after the first, one request at a time — or at once when no more can join the batch soon
 * (no job is held any more, or leasing waits for these acks); one heartbeat request
 * (`POST /v1/worker/heartbeat`) extends every held lease, waiting ones too. A job whose outcome was still
 * waiting in a batch when the process died is delivered again once its lease expires (at-least-once).
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
import { performance } from "node:perf_hooks";

import { AuthenticationError, LeaseLostError, NotFoundError, PermissionDeniedError, QueueFlowError } from "./errors.js";
import type { components } from "./generated/schema.js";
import { type Outcome, SHUT_DOWN, failure, jobLine, seconds, summary } from "./outcomes.js";
import { Table } from "./table.js";
import type { TaskDefinition } from "./tasks.js";
import { Transport, sleep } from "./transport.js";
import type { LeasedJob } from "./types.js";

export interface WorkerOptions {
  /** Where the server listens, e.g. `http://127.0.0.1:8000`. */
  baseUrl: string;
  /** A worker key; omit against a development-mode server. */
  workerKey?: string | undefined;
  /** The queues to drain, e.g. `["default"]`. */
  queues: string[];
  /** The most handlers running at once (default 10). */
  concurrency?: number | undefined;
  /** How many jobs to lease ahead of free slots; default: adaptive (see above), at most 700. */
  prefetch?: number | undefined;
  /** Send outcomes once this many are ready (default 100, at most 1000) … */
  ackBatch?: number | undefined;
  /** … or this long after the first one was (default 10 ms). */
  ackIntervalMs?: number | undefined;
  /** How long each lease and heartbeat extends the job's lock (default 30 s). */
  leaseSeconds?: number | undefined;
  /** Seconds between heartbeats (default a third of `leaseSeconds`). */
  heartbeatSeconds?: number | undefined;
  /** How long one lease call long-polls when nothing is claimable (0–60, default 20); `stop()` ends it at once. */
  waitSeconds?: number | undefined;
  /** How long `stop()` lets held jobs finish before aborting their signals (default 30 000 ms). */
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

/** What the worker writes its lines to; `console` is one. */
export interface WorkerLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export interface TaskContext {
  /** The job as leased, with its `delivery_count`, `retry_count`, `metadata`, … */
  readonly job: LeasedJob;
  /** Fires when the job must stop: lease lost (e.g. cancelled), deadline passed, or worker shutdown. */
  readonly signal: AbortSignal;
  /**
   * Report how far the task has come: `value` (any JSON, at most 64 KiB encoded) becomes the job's `progress`,
   * replacing the last one, and the lease is extended as by a heartbeat. Resolves false (and `signal` fires) if
   * the lease was lost, when nothing is recorded; rejects with a `ValidationError` for a value it cannot store.
   */
  progress(value: unknown): Promise<boolean>;
}

export type TaskHandler<P = Record<string, unknown>> = (payload: P, ctx: TaskContext) => unknown;

export { FatalError, RetryError } from "./outcomes.js";

/** The reason a held job's signal aborts when the worker stops before the job finishes. */
export class ShutdownError extends QueueFlowError {
  override name = "ShutdownError";
}

/** The reason a held job's signal aborts when its `deadline` (its `timeout_seconds`) passes. */
export class DeadlineError extends QueueFlowError {
  override name = "DeadlineError";
}

type Schemas = components["schemas"];

/** The most items the server takes in one lease, ack or heartbeat. */
const MAX_BATCH = 1000;
/**
 * The most jobs leased ahead by default. Every job of a lease answer is parsed at once and stays alive until it
 * has run, so the bigger the batch, the more V8 copies at each young-generation collection — and past a total it
 * doubles the young generation for good (+25 MB RSS). With 1,000 ahead (answers of ~500 jobs) it did so during a
 * 200,000-job no-op drain (peak RSS 113–117 MB); with 700 it did not (86–89 MB), for 1–8% fewer no-op jobs a
 * second (alternating drains, 2026-12-02). Any long enough busy run may still reach V8's default maximum.
 */
const MAX_AHEAD = 700;
/** The weight of the newest sample in the running averages of task durations and lease round trips. */
const SMOOTHING = 0.2;

interface Recorded {
  id: string;
  lease_token: string;
  outcome: Outcome;
}

/** How many of the latest ack sizes `Worker.ackBatches` keeps (at least; up to twice as many between trims). */
const ACK_BATCHES_KEPT = 1000;

export class Worker {
  /** The default of each setting: the same as the Python SDK's `Worker` (its names in snake_case, in seconds). */
  static readonly defaults = Object.freeze({
    concurrency: 10,
    waitSeconds: 20,
    leaseSeconds: 30,
    shutdownGraceMs: 30_000,
    ackBatch: 100,
    ackIntervalMs: 10,
  });

  readonly #transport: Transport;
  readonly #handlers = new Map<string, TaskHandler<never>>();
  /** Running jobs by lease token: one job may be here twice (an expired lease's delivery and the new one). */
  readonly #held = new Table<HeldJob>();
  /** Jobs leased ahead, waiting for a slot. */
  #waiting: LeasedJob[] = [];
  /** Every job held until its outcome is recorded: id → lease token (what a heartbeat extends). */
  readonly #leases = new Table<string>();
  #outcomes: Recorded[] = [];
  /** Outcomes recorded whose ack has not answered yet: queued, or being sent. */
  #unacked = 0;
  #acking: Promise<void> | undefined;
  #ackTimer: ReturnType<typeof setTimeout> | undefined;
  #heartbeats: ReturnType<typeof setInterval> | undefined;
  #heartbeating = false;
  /** Task names already warned about: a job of a task this worker has no handler for. */
  readonly #unknownTasks = new Set<string>();
  /** Why the worker stopped on its own: the server refused the key. */
  #failure: unknown;
  /** Ends the drain's grace period now (a second signal). */
  #quit: (() => void) | undefined;
  #quitting = false;
  #stopHint = "";
  /** Aborts a lease call in flight when the worker stops. */
  #leaseCall: AbortController | undefined;
  readonly #options: Required<
    Pick<WorkerOptions, "concurrency" | "leaseSeconds" | "waitSeconds" | "shutdownGraceMs" | "ackBatch" | "ackIntervalMs">
  > & {
    prefetch: number | undefined;
    heartbeatMs: number;
    workerId: string;
    queues: string[];
    onError: (error: unknown, job?: LeasedJob) => void;
    logger: WorkerLogger;
    logJobs: boolean;
  };
  #stopping = new AbortController();
  #running: Promise<void> | undefined;
  /** Wakes the lease loop: a slot freed, or the worker is stopping. Never a listener on a long-lived signal. */
  #wake: (() => void) | undefined;
  /** Wakes the drain: every held job has ended. */
  #idle: (() => void) | undefined;
  #taskMs: number | undefined;
  #leaseMs: number | undefined;
  /** The sizes of the last `ACK_BATCHES_KEPT` acks sent, oldest first (for tests and metrics). */
  readonly ackBatches: number[] = [];

  constructor(options: WorkerOptions) {
    if (options.queues.length === 0) throw new TypeError("queues must name at least one queue");
    const defaults = Worker.defaults;
    const concurrency = options.concurrency ?? defaults.concurrency;
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new TypeError("concurrency must be a positive integer");
    if (options.prefetch !== undefined && (!Number.isInteger(options.prefetch) || options.prefetch < 0)) {
      throw new TypeError("prefetch must be a whole number, at least 0");
    }
    const leaseSeconds = options.leaseSeconds ?? defaults.leaseSeconds;
    const waitSeconds = options.waitSeconds ?? defaults.waitSeconds;
    this.#transport = new Transport({
      baseUrl: options.baseUrl,
      token: options.workerKey,
      timeoutMs: options.timeoutMs,
      maxRetries: options.maxRetries,
      fetch: options.fetch,
    });
    this.#options = {
      concurrency,
      prefetch: options.prefetch,
      leaseSeconds,
      waitSeconds,
      shutdownGraceMs: options.shutdownGraceMs ?? defaults.shutdownGraceMs,
      ackBatch: Math.max(1, Math.min(options.ackBatch ?? defaults.ackBatch, MAX_BATCH)),
      ackIntervalMs: options.ackIntervalMs ?? defaults.ackIntervalMs,
      heartbeatMs: (options.heartbeatSeconds ?? leaseSeconds / 3) * 1000,
      workerId: options.workerId ?? `${hostname()}:${process.pid}`,
      queues: [...options.queues],
      onError: options.onError ?? ((error, job) => console.error(`queueflow worker${job ? ` (job ${job.id})` : ""}:`, error)),
      logger: options.logger ?? console,
      logJobs: options.logJobs ?? false,
    };
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
   * defaults, `ctx.signal` never aborts and `ctx.progress` answers true. Resolves with the result as the job would store it (through JSON);
   * what the handler throws (`RetryError`, `FatalError`, any error) rejects.
   */
  async runLocal(taskName: string, payload: Record<string, unknown> = {}, job: Partial<LeasedJob> = {}): Promise<unknown> {
    const handler = this.#handlers.get(taskName);
    if (!handler) {
      throw new TypeError(`no handler for task ${JSON.stringify(taskName)} (it has: ${[...this.#handlers.keys()].sort().join(", ")})`);
    }
    const sent = JSON.parse(JSON.stringify(payload)) as Record<string, unknown>;
    const now = new Date().toISOString();
    const leased: LeasedJob = {
      id: "job_local",
      tenant_id: "local",
      queue_name: this.#options.queues[0] ?? "default",
      task_name: taskName,
      payload: sent,
      status: "running",
      priority: 0,
      scheduled_at: now,
      locked_until: null,
      delivery_count: 1,
      retry_count: 0,
      max_retries: 3,
      backoff: { strategy: "exponential", base_seconds: 1, max_seconds: 3600, jitter: true },
      timeout_seconds: null,
      next_retry_at: null,
      result: null,
      error_message: null,
      workflow_id: null,
      workflow_step_id: null,
      metadata: {},
      idempotency_key: null,
      concurrency_key: null,
      created_at: now,
      started_at: now,
      completed_at: null,
      lease_token: "local",
      deadline: null,
      progress: null,
      trace_context: null,
      ...job,
    };
    const progress = () => Promise.resolve(true); // reported to no one: the job exists nowhere
    const result = await handler(sent as never, { job: leased, signal: new AbortController().signal, progress });
    return JSON.parse(JSON.stringify(result === undefined ? null : result)) as unknown;
  }

  /** How many jobs this worker holds right now: running, or leased ahead and waiting for a slot. */
  get activeJobs(): number {
    return this.#held.size + this.#waiting.length;
  }

  /** How many handlers run right now. */
  get runningJobs(): number {
    return this.#held.size;
  }

  /**
   * Start leasing. The promise resolves once the worker has stopped and every held job is settled,
   * so a script can `await worker.start()`; a service can ignore it and `await worker.stop()` later.
   */
  start(): Promise<void> {
    if (this.#running) throw new Error("the worker is already running");
    if (this.#handlers.size === 0) throw new Error("register a task with worker.task(name, handler) before start()");
    this.#stopping = new AbortController();
    this.#failure = undefined;
    this.#quitting = false;
    this.#stopHint = "";
    const { workerId, queues, concurrency, logger } = this.#options;
    logger.info(
      `worker ${workerId}: started; queues: ${queues.join(", ")}; tasks: ${[...this.#handlers.keys()].sort().join(", ")}; concurrency ${concurrency}`,
    );
    this.#heartbeats = setInterval(() => void this.#heartbeat(), this.#options.heartbeatMs);
    this.#running = this.#loop().then(() => {
      if (this.#failure !== undefined) throw this.#failure;
    });
    return this.#running;
  }

  /**
   * Stop gracefully: lease nothing more (a long-poll in flight is waited out, and what it brings is run),
   * run every held job (up to `shutdownGraceMs`), record the outcomes, then abort the signals of the ones
   * still running and hand them back to the queue for another worker.
   */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#halt();
    try {
      await this.#running;
    } catch (error) {
      if (error !== this.#failure) throw error; // a refused key rejects start()'s promise, not stop()'s
    } finally {
      this.#running = undefined;
    }
  }

  /** Stop leasing (a lease call in flight is ended: the server hands back what it claimed for it). */
  #halt(): void {
    if (!this.#stopping.signal.aborted) this.#stopping.abort(new ShutdownError("the worker is stopping"));
    this.#leaseCall?.abort(new ShutdownError("the worker is stopping"));
    this.#wakeLoop();
  }

  /** Stop now: what still runs is aborted and handed back, as when the grace period ends. */
  quit(): void {
    this.#quitting = true;
    this.#halt();
    const quit = this.#quit;
    this.#quit = undefined;
    quit?.();
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
        this.#stopHint = " (Ctrl-C again to quit)";
        this.#options.logger.info(`worker ${this.#options.workerId}: ${signal}: stopping`);
        // Once stopped, a signal does what it would without the worker again.
        this.stop()
          .catch(() => undefined) // a failure is start()'s to report
          .finally(dispose);
      } else {
        this.#options.logger.warn(`worker ${this.#options.workerId}: ${signal} again: quitting now`);
        this.quit();
      }
    };
    for (const signal of signals) process.on(signal, onSignal);
    return dispose;
  }

  /** How many jobs to hold beyond the running ones now. */
  #ahead(): number {
    const { prefetch, concurrency } = this.#options;
    if (prefetch !== undefined) return prefetch;
    if (this.#taskMs === undefined || this.#leaseMs === undefined) return concurrency;
    const perMs = concurrency / Math.max(this.#taskMs, 0.001);
    return Math.min(MAX_AHEAD, Math.floor(2 * perMs * this.#leaseMs) + 1);
  }

  /** The most jobs to hold: running and waiting. */
  #capacity(): number {
    return this.#options.concurrency + this.#ahead();
  }

  /**
   * How many jobs to ask for now: none until half the places are free, so claims come in batches; none either while
   * a whole capacity of outcomes waits for its acks (a slow server): more jobs would only wait with them, their
   * leases running out.
   */
  #roomForLease(): number {
    const capacity = this.#capacity();
    if (this.#unacked >= capacity) return 0;
    const want = Math.min(capacity - this.activeJobs, MAX_BATCH);
    return want >= Math.max(1, Math.floor(capacity / 2)) || (want > 0 && this.activeJobs === 0) ? want : 0;
  }

  /** Wake the lease loop if it waits and there is room for a lease now (a slot or an ack came free). */
  #offerRoom(): void {
    if (this.#wake && this.#roomForLease() > 0) this.#wakeLoop();
  }

  #wakeLoop(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  async #loop(): Promise<void> {
    const stopping = this.#stopping.signal;
    let failures = 0;
    while (!stopping.aborted) {
      const want = this.#roomForLease();
      if (want === 0) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        continue;
      }
      let jobs: LeasedJob[];
      const began = performance.now();
      try {
        // Aborted by stop(): a long-poll whose client left claims nothing more, and the server hands back (not
        // counted as a delivery) what it claimed for it.
        jobs = await this.#lease(want);
        failures = 0;
      } catch (error) {
        if (this.#refused(error) || stopping.aborted) break;
        this.#options.onError(error);
        failures += 1;
        await sleep(Math.min(500 * 2 ** failures, 15_000), stopping).catch(() => undefined);
        continue;
      }
      if (jobs.length === want) this.#leaseMs = average(this.#leaseMs, Math.min(performance.now() - began, 1000));
      for (const job of jobs) this.#take(job); // even when stopping: they are held now, and held jobs finish
    }
    await this.#drain();
  }

  async #lease(maxJobs: number): Promise<LeasedJob[]> {
    const { waitSeconds, leaseSeconds, workerId, queues } = this.#options;
    const body = {
      queues,
      max_jobs: maxJobs,
      lease_seconds: leaseSeconds,
      wait_seconds: waitSeconds,
      worker_id: workerId,
      task_names: [...this.#handlers.keys()], // only the tasks it has handlers for: others are left to their workers
    };
    const call = (this.#leaseCall = new AbortController());
    try {
      const answer = await this.#transport.post(
        "/v1/worker/lease",
        body,
        // Not repeated by the transport: a lost answer's jobs come back when their lease expires.
        // A long-poll legitimately takes `waitSeconds`; only time beyond that is a slow server.
        { safe: false, timeoutMs: this.#transport.timeoutMs + waitSeconds * 1000, signal: call.signal },
      );
      return answer.jobs;
    } finally {
      this.#leaseCall = undefined;
    }
  }

  /** A refused key (401, 403): retrying cannot help, so the worker stops and says why, once. */
  #refused(error: unknown): boolean {
    if (!(error instanceof AuthenticationError || error instanceof PermissionDeniedError)) return false;
    if (this.#failure === undefined) {
      this.#failure = error;
      this.#options.logger.error(
        `worker ${this.#options.workerId}: the server refused the worker key (${error.message}); stopping. ` +
          "A worker needs one of the server's worker keys (QUEUEFLOW_WORKER_KEYS), not a tenant API key.",
      );
      this.#halt();
    }
    return true;
  }

  #take(job: LeasedJob): void {
    const earlier = this.#leases.get(job.id);
    // Delivered again while an earlier delivery is still here (its lease expired while it waited or ran, and the
    // janitor handed the job out anew): that lease is lost, so its delivery is dropped.
    if (earlier !== undefined && earlier !== job.lease_token) this.#lost(job.id, earlier);
    this.#leases.set(job.id, job.lease_token);
    if (this.#held.size < this.#options.concurrency) this.#run(job);
    else this.#waiting.push(job);
  }

  #run(job: LeasedJob): void {
    const held = new HeldJob(job);
    this.#held.set(job.lease_token, held);
    if (job.deadline) {
      const ms = Date.parse(job.deadline) - Date.now();
      held.deadline = setTimeout(() => held.abort(new DeadlineError(`job ${job.id} passed its deadline`)), Math.max(ms, 0));
    }
    const began = performance.now();
    void this.#execute(held).then((outcome) => {
      clearTimeout(held.deadline);
      this.#held.delete(job.lease_token);
      const ms = performance.now() - began;
      if (held.lost) {
        // The lease is void: the server already moved the job on (cancelled, reclaimed).
        if (this.#leases.get(job.id) === job.lease_token) this.#leases.delete(job.id);
      } else {
        this.#taskMs = average(this.#taskMs, ms);
        this.#record({ id: job.id, lease_token: job.lease_token, outcome });
        this.#report(job, outcome, ms);
      }
      this.#ended();
    });
  }

  /** One line per job: failures always (with their stack), the rest with `logJobs`. */
  #report(job: LeasedJob, outcome: Outcome, ms: number): void {
    const { logger, logJobs } = this.#options;
    if (!("error" in outcome)) {
      if (logJobs) logger.info(`${jobLine(job)}: completed in ${seconds(ms)}`);
      return;
    }
    if (outcome.requested) {
      if (logJobs) logger.info(`${jobLine(job)}: asked to retry in ${outcome.retryAfterSeconds} s after ${seconds(ms)}: ${summary(outcome.error)}`);
      return;
    }
    if (outcome.said) {
      if (logJobs) logger.info(`${jobLine(job)}: no handler, dead-lettered`);
      return;
    }
    const then = !outcome.retryable
      ? "dead-lettered"
      : job.retry_count >= job.max_retries
        ? "dead-lettered: no retries left"
        : `retry ${job.retry_count + 1} of ${job.max_retries} follows`;
    logger.warn(`${jobLine(job)}: failed after ${seconds(ms)} (${then}): ${outcome.error}`);
  }

  /** A running job ended: start waiting ones, tell the lease loop and the drain. */
  #ended(): void {
    while (this.#waiting.length > 0 && this.#held.size < this.#options.concurrency) {
      const next = this.#waiting.shift();
      if (next) this.#run(next);
    }
    if (this.activeJobs === 0) {
      const idle = this.#idle;
      this.#idle = undefined;
      idle?.();
    }
    this.#offerRoom();
  }

  /** Not an async function: a handler's promise is the one promise waited on, with no others chained to it. */
  #execute(held: HeldJob): Promise<Outcome> {
    const { job } = held;
    const handler = this.#handlers.get(job.task_name);
    if (!handler) return Promise.resolve(this.#unknown(job));
    try {
      const result = traced(job, () => handler(job.payload as never, new JobContext(held, (value) => this.#progress(held, value))));
      return Promise.resolve(result).then(completed, failure);
    } catch (error) {
      return Promise.resolve(failure(error)); // thrown before the handler's promise (or by a function handler)
    }
  }

  /** A job the server should not have sent (it leases only this worker's tasks): dead-lettered, said once per task. */
  #unknown(job: LeasedJob): Outcome {
    const known = [...this.#handlers.keys()].sort().join(", ");
    if (!this.#unknownTasks.has(job.task_name)) {
      this.#unknownTasks.add(job.task_name);
      this.#options.logger.warn(
        `worker ${this.#options.workerId}: leased job ${job.id} of task ${JSON.stringify(job.task_name)}, which this worker ` +
          `has no handler for (it has: ${known}): dead-lettering it (replay it from the dead-letter queue once a worker ` +
          "runs the task); further jobs of that task are not logged again",
      );
    }
    return { error: `no handler for task ${JSON.stringify(job.task_name)} on this worker (it has: ${known})`, retryable: false, said: true };
  }

  #record(recorded: Recorded): void {
    this.#outcomes.push(recorded);
    this.#unacked += 1;
    // At once, too, when no more outcomes can join the batch soon: none is held (more come only with a lease), or
    // leasing waits for these acks — a capacity below ackBatch (few slots, slow tasks) stalled every capacity of
    // jobs for ackIntervalMs.
    const now = this.#outcomes.length >= this.#options.ackBatch || this.activeJobs === 0 || this.#unacked >= this.#capacity();
    if (now) this.#flush();
    else this.#ackTimer ??= setTimeout(() => this.#flush(), this.#options.ackIntervalMs);
  }

  /** Send the outcomes that are ready, one request at a time; what comes meanwhile goes in the next. */
  #flush(): Promise<void> {
    clearTimeout(this.#ackTimer);
    this.#ackTimer = undefined;
    // Only with something to send: a chain started on nothing would end before it is stored here, and the
    // settled promise stored after its end would then pass for a chain in flight forever — no outcome sent
    // again while the jobs stay in `#leases`, heartbeated for ever.
    if (this.#acking === undefined && this.#outcomes.length > 0) this.#acking = this.#sendOutcomes();
    return this.#acking ?? Promise.resolve();
  }

  async #sendOutcomes(): Promise<void> {
    try {
      while (this.#outcomes.length > 0) {
        const batch = this.#outcomes.slice(0, MAX_BATCH);
        this.#outcomes = this.#outcomes.slice(MAX_BATCH);
        await this.#ack(batch);
      }
    } finally {
      this.#acking = undefined; // also if #ack threw (an `onError` that throws): the next flush starts a new chain
    }
  }

  async #ack(batch: Recorded[]): Promise<void> {
    this.ackBatches.push(batch.length);
    // Bounded, so a worker that runs for days does not grow by a number per ack (trimmed in bulk: amortised O(1)).
    if (this.ackBatches.length >= 2 * ACK_BATCHES_KEPT) this.ackBatches.splice(0, ACK_BATCHES_KEPT);
    const complete: Schemas["AckComplete"][] = [];
    const fail: Schemas["AckFail"][] = [];
    for (const { id, lease_token, outcome } of batch) {
      if ("result" in outcome) complete.push({ id, lease_token, result: outcome.result });
      else {
        fail.push({
          id,
          lease_token,
          error: outcome.error,
          retryable: outcome.retryable,
          ...(outcome.retryAfterSeconds === undefined ? {} : { retry_after_seconds: outcome.retryAfterSeconds }),
        });
      }
    }
    try {
      // May be repeated: a duplicate is answered `lease_lost`, never applied twice.
      await this.#transport.send("/v1/worker/ack", { complete, fail }, { safe: true });
    } catch (error) {
      // Left to the leases' expiry: the jobs are delivered again.
      if (!this.#refused(error)) this.#options.onError(error);
    } finally {
      for (const { id, lease_token } of batch) {
        if (this.#leases.get(id) === lease_token) this.#leases.delete(id);
      }
      this.#unacked -= batch.length;
      this.#offerRoom();
    }
  }

  /** One request extends every lease held; a lost one tells its handler (or drops the waiting job). */
  async #heartbeat(): Promise<void> {
    if (this.#heartbeating || this.#leases.size === 0) return;
    this.#heartbeating = true;
    try {
      const held = this.#leases.entries();
      for (let start = 0; start < held.length; start += MAX_BATCH) {
        const chunk = held.slice(start, start + MAX_BATCH);
        const body = { jobs: chunk.map(([id, lease_token]) => ({ id, lease_token })), lease_seconds: this.#options.leaseSeconds };
        let answer;
        try {
          answer = await this.#transport.post("/v1/worker/heartbeat", body, { safe: true });
        } catch (error) {
          // Unreachable for now: the leases may still hold; try again next time.
          if (!this.#refused(error)) this.#options.onError(error);
          continue;
        }
        for (const [index, result] of answer.results.entries()) {
          const [id, token] = chunk[index] ?? [];
          if (result.outcome === "lease_lost" && id !== undefined && token !== undefined) this.#lost(id, token);
        }
      }
    } finally {
      this.#heartbeating = false;
    }
  }

  #lost(id: string, token: string): void {
    if (this.#leases.get(id) !== token) return; // settled meanwhile
    const running = this.#held.get(token);
    if (running) {
      running.lost = true;
      running.abort(new LeaseLostError(409, "lease_lost", `job ${id}: the lease was lost (cancelled or reclaimed)`));
      return;
    }
    const waiting = this.#waiting.findIndex((job) => job.id === id && job.lease_token === token);
    if (waiting >= 0) {
      this.#waiting.splice(waiting, 1);
      this.#leases.delete(id);
      this.#ended();
    }
  }

  async #progress(held: HeldJob, value: unknown): Promise<boolean> {
    if (held.lost) return false;
    try {
      await this.#transport.call(
        (signal) => this.#transport.api.POST("/v1/worker/jobs/{job_id}/heartbeat", {
          params: { path: { job_id: held.job.id } },
          body: { lease_token: held.job.lease_token, lease_seconds: this.#options.leaseSeconds, progress: value },
          signal,
        }),
        { safe: true },
      );
      return true;
    } catch (error) {
      if (error instanceof LeaseLostError || error instanceof NotFoundError) {
        held.lost = true;
        held.abort(error);
        return false;
      }
      throw error;
    }
  }

  /** Run every held job; past the grace period, abort the rest and give them back to the queue. */
  async #drain(): Promise<void> {
    if (this.activeJobs > 0) {
      const { workerId, shutdownGraceMs, logger } = this.#options;
      logger.info(`worker ${workerId}: finishing ${this.activeJobs} jobs (up to ${shutdownGraceMs / 1000} s)${this.#stopHint}`);
      const idle = new Promise<"done">((resolve) => {
        this.#idle = () => resolve("done");
      });
      const quit = new Promise<"late">((resolve) => {
        this.#quit = () => resolve("late");
        if (this.#quitting) resolve("late");
      });
      const grace = new AbortController();
      const timer = sleep(shutdownGraceMs, grace.signal).then(
        () => "late" as const,
        () => "done" as const,
      );
      const first = await Promise.race([idle, timer, quit]);
      this.#quit = undefined;
      grace.abort();
      if (first === "late") {
        for (const job of this.#waiting) {
          this.#record({ id: job.id, lease_token: job.lease_token, outcome: SHUT_DOWN });
        }
        this.#waiting = [];
        for (const held of this.#held.values()) {
          held.abort(new ShutdownError("the worker stopped before the job finished"));
          held.lost = true; // whatever the handler does next, this worker no longer reports on the job
          clearTimeout(held.deadline);
          this.#record({ id: held.job.id, lease_token: held.job.lease_token, outcome: SHUT_DOWN });
        }
      }
    }
    await this.#flush();
    clearInterval(this.#heartbeats);
    this.#heartbeats = undefined;
    this.#transport.close();
    this.#options.logger.info(`worker ${this.#options.workerId}: stopped`);
  }
}

function completed(result: unknown): Outcome {
  return { result: result === undefined ? null : result };
}

function average(current: number | undefined, sample: number): number {
  return current === undefined ? sample : current + SMOOTHING * (sample - current);
}

class HeldJob {
  /**
   * Made when the handler first reads `ctx.signal` or the job is aborted, not before: an `AbortSignal` per job
   * costs more than a no-op job itself. Node 20 makes each one with `Object.setPrototypeOf`, and V8 then keeps
   * the object through young-generation collections: about 0.5 KB per signal went to the old generation, already
   * dead. Over 200,000 jobs that made 20 of the worker's 140 MB peak RSS.
   */
  #controller: AbortController | undefined;
  deadline: ReturnType<typeof setTimeout> | undefined;
  lost = false;

  constructor(readonly job: LeasedJob) {}

  get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    if (!this.signal.aborted) this.#controller?.abort(reason);
  }
}

/** What a handler gets: its `signal` is made on first read (see `HeldJob`). */
class JobContext implements TaskContext {
  readonly job: LeasedJob;
  readonly #held: HeldJob;

  constructor(
    held: HeldJob,
    readonly progress: (value: unknown) => Promise<boolean>,
  ) {
    this.job = held.job;
    this.#held = held;
  }

  get signal(): AbortSignal {
    return this.#held.signal;
  }
}

// ---- OpenTelemetry, when installed ------------------------------------------------------------------------
//
// `@opentelemetry/api` is an optional peer dependency: loaded once, by name at run time, so that this package
// neither needs it nor exposes its types. What is used of it is declared here.

interface OtelSpan {
  recordException(exception: unknown): void;
  setStatus(status: { code: number; message?: string }): void;
  end(): void;
}
interface OtelApi {
  ProxyTracerProvider: new () => { getDelegate(): unknown };
  trace: {
    getTracerProvider(): unknown;
    getTracer(name: string, version?: string): {
      startActiveSpan<T>(name: string, options: object, context: unknown, run: (span: OtelSpan) => T): T;
    };
    setSpanContext(context: unknown, spanContext: object): unknown;
  };
  context: { active(): unknown; with<T>(context: unknown, run: () => T): T };
  SpanKind: { CONSUMER: number };
  SpanStatusCode: { ERROR: number };
}

const OTEL_MODULE = "@opentelemetry/api";
let otel: Promise<OtelApi | null> | undefined;
/** The module once loaded (null: not installed); undefined until then. */
let otelApi: OtelApi | null | undefined;

function loadOtel(): Promise<OtelApi | null> {
  otel ??= import(OTEL_MODULE).then(
    (module: OtelApi) => (otelApi = module),
    () => (otelApi = null),
  );
  return otel;
}

let noopProvider: unknown;

/** Whether a tracer provider is registered: the global one is a proxy, whose delegate is then not the no-op one. */
function recording(api: OtelApi): boolean {
  noopProvider ??= new api.ProxyTracerProvider().getDelegate();
  const provider = api.trace.getTracerProvider();
  return !(provider instanceof api.ProxyTracerProvider) || provider.getDelegate() !== noopProvider;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})/;

/**
 * Run a task in a span `queueflow.task <name>` whose parent is the job's trace context (that of the request that
 * enqueued it), when `@opentelemetry/api` is installed; a thrown error is recorded on the span.
 *
 * Once the module is loaded (or known absent) and no span is made, `run` is called directly and what it returns
 * or throws is the caller's: no promise of its own per job, nor one to wait for the module again.
 */
function traced(job: LeasedJob, run: () => unknown): unknown {
  if (otelApi === undefined) return loadOtel().then(() => traced(job, run));
  const api = otelApi;
  if (!api) return run();
  let parent = api.context.active();
  const match = job.trace_context ? TRACEPARENT.exec(job.trace_context.traceparent) : null;
  if (match) {
    parent = api.trace.setSpanContext(parent, {
      traceId: match[2],
      spanId: match[3],
      traceFlags: Number.parseInt(match[4] ?? "0", 16),
      isRemote: true,
    });
  }
  // No tracer provider registered (the API installed, as a dependency of something, but no SDK): no span could be
  // recorded, so none is made — its contexts, attributes and closures were a quarter of a no-op job's garbage.
  // The job's trace context is still the handler's, for a propagator of its own.
  if (!recording(api)) return match ? api.context.with(parent, run) : run();
  const options = {
    kind: api.SpanKind.CONSUMER,
    attributes: {
      "queueflow.job_id": job.id,
      "queueflow.task_name": job.task_name,
      "queueflow.queue": job.queue_name,
      "queueflow.delivery_count": job.delivery_count,
    },
  };
  return api.trace.getTracer("@queueflow/client").startActiveSpan(`queueflow.task ${job.task_name}`, options, parent, async (span) => {
    try {
      return await run();
    } catch (error) {
      span.recordException(error);
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      throw error;
    } finally {
      span.end();
    }
  });
}
