/**
 * `Worker`: leases jobs from the worker routes and runs them with registered task handlers.
 *
 * At most `concurrency` handlers run at once, and more jobs are leased ahead and wait their turn, so a free
 * slot never waits for a round trip: by default as many as the slots get through in two lease round trips
 * (task durations and round trips are measured), at most 1000 — short tasks are claimed by the hundred, long
 * ones hardly ahead at all. Outcomes are recorded in batches (`POST /v1/worker/ack`) sent when `ackBatch` are
 * ready or `ackIntervalMs` after the first, one request at a time; one heartbeat request
 * (`POST /v1/worker/heartbeat`) extends every held lease, waiting ones too. A job whose outcome was still
 * waiting in a batch when the process died is delivered again once its lease expires (at-least-once).
 *
 * Each running job has an `AbortSignal` that fires when the lease is lost (the job was cancelled, or the
 * lease expired), when its deadline passes, or when the worker stops past its grace period. A handler's
 * return value completes the job; a thrown error fails it.
 */

import { hostname } from "node:os";
import { performance } from "node:perf_hooks";

import { LeaseLostError, NotFoundError, QueueFlowError } from "./errors.js";
import type { components } from "./generated/schema.js";
import { Transport, sleep } from "./transport.js";
import type { LeasedJob } from "./types.js";

export interface WorkerOptions {
  /** Where the server listens, e.g. `http://127.0.0.1:8000`. */
  baseUrl: string;
  /** A worker key; omit against a development-mode server. */
  workerKey?: string | undefined;
  /** The queues to drain, e.g. `["default"]`. */
  queues: string[];
  /** The most handlers running at once (default 1). */
  concurrency?: number | undefined;
  /** How many jobs to lease ahead of free slots; default: adaptive (see above), at most 1000. */
  prefetch?: number | undefined;
  /** Send outcomes once this many are ready (default 100, at most 1000) … */
  ackBatch?: number | undefined;
  /** … or this long after the first one was (default 10 ms). */
  ackIntervalMs?: number | undefined;
  /** How long each lease and heartbeat extends the job's lock (default 30 s). */
  leaseSeconds?: number | undefined;
  /** Seconds between heartbeats (default a third of `leaseSeconds`). */
  heartbeatSeconds?: number | undefined;
  /** How long one lease call long-polls when nothing is claimable (0–60, default 5); `stop()` may wait this long. */
  waitSeconds?: number | undefined;
  /** How long `stop()` lets held jobs finish before aborting their signals (default 30 000 ms). */
  shutdownGraceMs?: number | undefined;
  /** Shown in the server's lease records (default `hostname:pid`). */
  workerId?: string | undefined;
  timeoutMs?: number | undefined;
  maxRetries?: number | undefined;
  fetch?: typeof globalThis.fetch | undefined;
  /** Told about failures the worker survives (a lease call that failed, a lost heartbeat); default `console.error`. */
  onError?: ((error: unknown, job?: LeasedJob) => void) | undefined;
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

/** Throw from a handler to retry the job after `afterSeconds` instead of its backoff. */
export class RetryError extends Error {
  override name = "RetryError";
  constructor(
    readonly afterSeconds: number,
    message = `retry in ${afterSeconds} s`,
  ) {
    super(message);
  }
}

/** Throw from a handler to dead-letter the job at once, whatever retries it has left. */
export class FatalError extends Error {
  override name = "FatalError";
}

/** The reason a held job's signal aborts when the worker stops before the job finishes. */
export class ShutdownError extends QueueFlowError {
  override name = "ShutdownError";
}

/** The reason a held job's signal aborts when its `deadline` (its `timeout_seconds`) passes. */
export class DeadlineError extends QueueFlowError {
  override name = "DeadlineError";
}

type Schemas = components["schemas"];

const MAX_ERROR_CHARS = 65_536;
/** The most items the server takes in one lease, ack or heartbeat. */
const MAX_BATCH = 1000;
/** The weight of the newest sample in the running averages of task durations and lease round trips. */
const SMOOTHING = 0.2;

interface Recorded {
  id: string;
  lease_token: string;
  outcome: Outcome;
}

export class Worker {
  readonly #transport: Transport;
  readonly #handlers = new Map<string, TaskHandler<never>>();
  /** Running jobs, by id. */
  readonly #held = new Map<string, HeldJob>();
  /** Jobs leased ahead, waiting for a slot. */
  #waiting: LeasedJob[] = [];
  /** Every job held until its outcome is recorded: id → lease token (what a heartbeat extends). */
  readonly #leases = new Map<string, string>();
  #outcomes: Recorded[] = [];
  #acking: Promise<void> | undefined;
  #ackTimer: ReturnType<typeof setTimeout> | undefined;
  #heartbeats: ReturnType<typeof setInterval> | undefined;
  #heartbeating = false;
  readonly #options: Required<
    Pick<WorkerOptions, "concurrency" | "leaseSeconds" | "waitSeconds" | "shutdownGraceMs" | "ackBatch" | "ackIntervalMs">
  > & {
    prefetch: number | undefined;
    heartbeatMs: number;
    workerId: string;
    queues: string[];
    onError: (error: unknown, job?: LeasedJob) => void;
  };
  #stopping = new AbortController();
  #running: Promise<void> | undefined;
  /** Wakes the lease loop: a slot freed, or the worker is stopping. Never a listener on a long-lived signal. */
  #wake: (() => void) | undefined;
  /** Wakes the drain: every held job has ended. */
  #idle: (() => void) | undefined;
  #taskMs: number | undefined;
  #leaseMs: number | undefined;
  /** The size of every ack sent (for tests and metrics). */
  readonly ackBatches: number[] = [];

  constructor(options: WorkerOptions) {
    if (options.queues.length === 0) throw new TypeError("queues must name at least one queue");
    const concurrency = options.concurrency ?? 1;
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new TypeError("concurrency must be a positive integer");
    if (options.prefetch !== undefined && (!Number.isInteger(options.prefetch) || options.prefetch < 0)) {
      throw new TypeError("prefetch must be a whole number, at least 0");
    }
    const leaseSeconds = options.leaseSeconds ?? 30;
    const waitSeconds = options.waitSeconds ?? 5;
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
      shutdownGraceMs: options.shutdownGraceMs ?? 30_000,
      ackBatch: Math.max(1, Math.min(options.ackBatch ?? 100, MAX_BATCH)),
      ackIntervalMs: options.ackIntervalMs ?? 10,
      heartbeatMs: (options.heartbeatSeconds ?? leaseSeconds / 3) * 1000,
      workerId: options.workerId ?? `${hostname()}:${process.pid}`,
      queues: [...options.queues],
      onError: options.onError ?? ((error, job) => console.error(`queueflow worker${job ? ` (job ${job.id})` : ""}:`, error)),
    };
  }

  /** Register the handler for `taskName`; its return value (JSON) becomes the job's `result`. */
  task<P = Record<string, unknown>>(taskName: string, handler: TaskHandler<P>): this {
    this.#handlers.set(taskName, handler as TaskHandler<never>);
    return this;
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
    this.#heartbeats = setInterval(() => void this.#heartbeat(), this.#options.heartbeatMs);
    this.#running = this.#loop();
    return this.#running;
  }

  /**
   * Stop gracefully: lease nothing more (a long-poll in flight is waited out, and what it brings is run),
   * run every held job (up to `shutdownGraceMs`), record the outcomes, then abort the signals of the ones
   * still running and hand them back to the queue for another worker.
   */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#stopping.abort(new ShutdownError("the worker is stopping"));
    this.#wakeLoop();
    await this.#running;
    this.#running = undefined;
  }

  /** Stop gracefully on SIGTERM/SIGINT; returns a function that removes the handlers again. */
  stopOnSignals(signals: NodeJS.Signals[] = ["SIGTERM", "SIGINT"]): () => void {
    const onSignal = () => void this.stop();
    for (const signal of signals) process.once(signal, onSignal);
    return () => {
      for (const signal of signals) process.removeListener(signal, onSignal);
    };
  }

  /** How many jobs to hold beyond the running ones now. */
  #ahead(): number {
    const { prefetch, concurrency } = this.#options;
    if (prefetch !== undefined) return prefetch;
    if (this.#taskMs === undefined || this.#leaseMs === undefined) return concurrency;
    const perMs = concurrency / Math.max(this.#taskMs, 0.001);
    return Math.min(MAX_BATCH, Math.floor(2 * perMs * this.#leaseMs) + 1);
  }

  /** How many jobs to ask for now: none until half the places are free, so claims come in batches. */
  #roomForLease(): number {
    const capacity = this.#options.concurrency + this.#ahead();
    const want = Math.min(capacity - this.activeJobs, MAX_BATCH);
    return want >= Math.max(1, Math.floor(capacity / 2)) || (want > 0 && this.activeJobs === 0) ? want : 0;
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
        // Not aborted by stop(): the server may already have claimed jobs for this call, and a dropped answer
        // would strand them until their lease expires. Stopping waits out the long-poll (`waitSeconds`) instead.
        jobs = await this.#lease(want);
        failures = 0;
      } catch (error) {
        if (stopping.aborted) break;
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
    // Only the tasks this worker has handlers for: another worker's jobs are left to it.
    const task_names = [...this.#handlers.keys()];
    const body = { queues, max_jobs: maxJobs, lease_seconds: leaseSeconds, wait_seconds: waitSeconds, worker_id: workerId, task_names };
    const answer = await this.#transport.call(
      (signal) => this.#transport.api.POST("/v1/worker/lease", { body, signal }),
      // Not repeated by the transport: a lost answer's jobs come back when their lease expires.
      // A long-poll legitimately takes `waitSeconds`; only time beyond that is a slow server.
      { safe: false, timeoutMs: this.#transport.timeoutMs + waitSeconds * 1000 },
    );
    return answer.jobs;
  }

  #take(job: LeasedJob): void {
    this.#leases.set(job.id, job.lease_token);
    if (this.#held.size < this.#options.concurrency) this.#run(job);
    else this.#waiting.push(job);
  }

  #run(job: LeasedJob): void {
    const held = new HeldJob(job);
    this.#held.set(job.id, held);
    if (job.deadline) {
      const ms = Date.parse(job.deadline) - Date.now();
      held.deadline = setTimeout(() => held.abort(new DeadlineError(`job ${job.id} passed its deadline`)), Math.max(ms, 0));
    }
    const began = performance.now();
    held.settled = this.#execute(held).then((outcome) => {
      clearTimeout(held.deadline);
      this.#held.delete(job.id);
      if (held.lost) {
        // The lease is void: the server already moved the job on (cancelled, reclaimed).
        if (this.#leases.get(job.id) === job.lease_token) this.#leases.delete(job.id);
      } else {
        this.#taskMs = average(this.#taskMs, performance.now() - began);
        this.#record({ id: job.id, lease_token: job.lease_token, outcome });
      }
      this.#ended();
    });
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
    if (this.#wake && this.#roomForLease() > 0) this.#wakeLoop();
  }

  async #execute(held: HeldJob): Promise<Outcome> {
    const { job } = held;
    const handler = this.#handlers.get(job.task_name);
    if (!handler) return { error: `no handler for task ${JSON.stringify(job.task_name)} on this worker`, retryable: false };
    try {
      const progress = (value: unknown) => this.#progress(held, value);
      const result = await traced(job, () => handler(job.payload as never, { job, signal: held.controller.signal, progress }));
      return { result: result === undefined ? null : result };
    } catch (error) {
      return failure(error);
    }
  }

  #record(recorded: Recorded): void {
    this.#outcomes.push(recorded);
    if (this.#outcomes.length >= this.#options.ackBatch) this.#flush();
    else this.#ackTimer ??= setTimeout(() => this.#flush(), this.#options.ackIntervalMs);
  }

  /** Send the outcomes that are ready, one request at a time; what comes meanwhile goes in the next. */
  #flush(): Promise<void> {
    clearTimeout(this.#ackTimer);
    this.#ackTimer = undefined;
    this.#acking ??= (async () => {
      while (this.#outcomes.length > 0) {
        const batch = this.#outcomes.slice(0, MAX_BATCH);
        this.#outcomes = this.#outcomes.slice(MAX_BATCH);
        await this.#ack(batch);
      }
      this.#acking = undefined;
    })();
    return this.#acking;
  }

  async #ack(batch: Recorded[]): Promise<void> {
    this.ackBatches.push(batch.length);
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
      await this.#transport.call((signal) => this.#transport.api.POST("/v1/worker/ack", { body: { complete, fail }, signal }), {
        safe: true,
      });
    } catch (error) {
      // Left to the leases' expiry: the jobs are delivered again.
      this.#options.onError(error);
    } finally {
      for (const { id, lease_token } of batch) {
        if (this.#leases.get(id) === lease_token) this.#leases.delete(id);
      }
    }
  }

  /** One request extends every lease held; a lost one tells its handler (or drops the waiting job). */
  async #heartbeat(): Promise<void> {
    if (this.#heartbeating || this.#leases.size === 0) return;
    this.#heartbeating = true;
    try {
      const held = [...this.#leases];
      for (let start = 0; start < held.length; start += MAX_BATCH) {
        const chunk = held.slice(start, start + MAX_BATCH);
        const body = { jobs: chunk.map(([id, lease_token]) => ({ id, lease_token })), lease_seconds: this.#options.leaseSeconds };
        let answer;
        try {
          answer = await this.#transport.call((signal) => this.#transport.api.POST("/v1/worker/heartbeat", { body, signal }), {
            safe: true,
          });
        } catch (error) {
          this.#options.onError(error); // unreachable for now: the leases may still hold; try again next time
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
    const running = this.#held.get(id);
    if (running && running.job.lease_token === token) {
      running.lost = true;
      running.abort(new LeaseLostError(409, "lease_lost", `job ${id}: the lease was lost (cancelled or reclaimed)`));
      return;
    }
    const waiting = this.#waiting.findIndex((job) => job.id === id);
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
      const idle = new Promise<"done">((resolve) => {
        this.#idle = () => resolve("done");
      });
      const grace = new AbortController();
      const timer = sleep(this.#options.shutdownGraceMs, grace.signal).then(
        () => "late" as const,
        () => "done" as const,
      );
      const first = await Promise.race([idle, timer]);
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
  }
}

const SHUT_DOWN: Outcome = { error: "the worker stopped before the job finished", retryable: true, retryAfterSeconds: 0 };

function average(current: number | undefined, sample: number): number {
  return current === undefined ? sample : current + SMOOTHING * (sample - current);
}

type Outcome = { result: unknown } | { error: string; retryable: boolean; retryAfterSeconds?: number };

function failure(error: unknown): Outcome {
  const message = errorText(error);
  if (error instanceof RetryError) return { error: message, retryable: true, retryAfterSeconds: error.afterSeconds };
  if (error instanceof FatalError) return { error: message, retryable: false };
  return { error: message, retryable: true };
}

function errorText(error: unknown): string {
  const text = error instanceof Error ? (error.name === "Error" ? error.message : `${error.name}: ${error.message}`) : String(error);
  // PostgreSQL text holds no NUL, and the server caps the message's length.
  return text.replaceAll("\u0000", "").slice(0, MAX_ERROR_CHARS) || "the task failed";
}

class HeldJob {
  readonly controller = new AbortController();
  deadline: ReturnType<typeof setTimeout> | undefined;
  lost = false;
  settled: Promise<void> = Promise.resolve();

  constructor(readonly job: LeasedJob) {}

  abort(reason: unknown): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
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
  trace: {
    getTracer(name: string, version?: string): {
      startActiveSpan<T>(name: string, options: object, context: unknown, run: (span: OtelSpan) => T): T;
    };
    setSpanContext(context: unknown, spanContext: object): unknown;
  };
  context: { active(): unknown };
  SpanKind: { CONSUMER: number };
  SpanStatusCode: { ERROR: number };
}

const OTEL_MODULE = "@opentelemetry/api";
let otel: Promise<OtelApi | null> | undefined;

function loadOtel(): Promise<OtelApi | null> {
  otel ??= import(OTEL_MODULE).then(
    (module: OtelApi) => module,
    () => null,
  );
  return otel;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})/;

/**
 * Run a task in a span `queueflow.task <name>` whose parent is the job's trace context (that of the request that
 * enqueued it), when `@opentelemetry/api` is installed; a thrown error is recorded on the span.
 */
async function traced<T>(job: LeasedJob, run: () => T | Promise<T>): Promise<T> {
  const api = await loadOtel();
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
