/**
 * `Worker`: leases jobs from the worker routes and runs them with registered task handlers.
 *
 * One loop long-polls for at most as many jobs as there are free slots, so the worker never holds more
 * than `concurrency` jobs. Each held job has a heartbeat timer and an `AbortSignal` that fires when the
 * lease is lost (the job was cancelled, or the lease expired), when its deadline passes, or when the
 * worker stops past its grace period. A handler's return value completes the job; a thrown error fails it.
 */

import { hostname } from "node:os";

import { LeaseLostError, NotFoundError, QueueFlowError } from "./errors.js";
import { Transport, sleep } from "./transport.js";
import type { LeasedJob } from "./types.js";

export interface WorkerOptions {
  /** Where the server listens, e.g. `http://127.0.0.1:8000`. */
  baseUrl: string;
  /** A worker key; omit against a development-mode server. */
  workerKey?: string | undefined;
  /** The queues to drain, e.g. `["default"]`. */
  queues: string[];
  /** The most jobs held at once (default 1). */
  concurrency?: number | undefined;
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

const MAX_ERROR_CHARS = 65_536;

export class Worker {
  readonly #transport: Transport;
  readonly #handlers = new Map<string, TaskHandler<never>>();
  readonly #held = new Map<string, HeldJob>();
  readonly #options: Required<Pick<WorkerOptions, "concurrency" | "leaseSeconds" | "waitSeconds" | "shutdownGraceMs">> & {
    heartbeatMs: number;
    workerId: string;
    queues: string[];
    onError: (error: unknown, job?: LeasedJob) => void;
  };
  #stopping = new AbortController();
  #running: Promise<void> | undefined;
  #slotFreed: (() => void) | undefined;

  constructor(options: WorkerOptions) {
    if (options.queues.length === 0) throw new TypeError("queues must name at least one queue");
    const concurrency = options.concurrency ?? 1;
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new TypeError("concurrency must be a positive integer");
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
      leaseSeconds,
      waitSeconds,
      shutdownGraceMs: options.shutdownGraceMs ?? 30_000,
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

  /** How many jobs this worker holds right now. */
  get activeJobs(): number {
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
    this.#running = this.#loop();
    return this.#running;
  }

  /**
   * Stop gracefully: lease nothing more (a long-poll in flight is waited out, and what it brings is run),
   * let held jobs finish (up to `shutdownGraceMs`), then abort the
   * signals of the ones still running and hand them back to the queue for another worker.
   */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#stopping.abort(new ShutdownError("the worker is stopping"));
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

  async #loop(): Promise<void> {
    const stopping = this.#stopping.signal;
    let failures = 0;
    while (!stopping.aborted) {
      const free = this.#options.concurrency - this.#held.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => {
          this.#slotFreed = resolve;
          stopping.addEventListener("abort", () => resolve(), { once: true });
        });
        continue;
      }
      let jobs: LeasedJob[];
      try {
        // Not aborted by stop(): the server may already have claimed jobs for this call, and a dropped answer
        // would strand them until their lease expires. Stopping waits out the long-poll (`waitSeconds`) instead.
        jobs = await this.#lease(free);
        failures = 0;
      } catch (error) {
        if (stopping.aborted) break;
        this.#options.onError(error);
        failures += 1;
        await sleep(Math.min(500 * 2 ** failures, 15_000), stopping).catch(() => undefined);
        continue;
      }
      for (const job of jobs) this.#run(job); // even when stopping: they are held now, and held jobs finish
    }
    await this.#drain();
  }

  async #lease(maxJobs: number): Promise<LeasedJob[]> {
    const { waitSeconds, leaseSeconds, workerId, queues } = this.#options;
    const body = { queues, max_jobs: maxJobs, lease_seconds: leaseSeconds, wait_seconds: waitSeconds, worker_id: workerId };
    const answer = await this.#transport.call(
      (signal) => this.#transport.api.POST("/v1/worker/lease", { body, signal }),
      // Not repeated by the transport: a lost answer's jobs come back when their lease expires.
      // A long-poll legitimately takes `waitSeconds`; only time beyond that is a slow server.
      { safe: false, timeoutMs: this.#transport.timeoutMs + waitSeconds * 1000 },
    );
    return answer.jobs;
  }

  #run(job: LeasedJob): void {
    const held = new HeldJob(job);
    this.#held.set(job.id, held);
    held.heartbeats = setInterval(() => void this.#heartbeat(held), this.#options.heartbeatMs);
    if (job.deadline) {
      const ms = Date.parse(job.deadline) - Date.now();
      held.deadline = setTimeout(() => held.abort(new DeadlineError(`job ${job.id} passed its deadline`)), Math.max(ms, 0));
    }
    held.settled = this.#execute(held).finally(() => {
      held.clearTimers();
      this.#held.delete(job.id);
      this.#slotFreed?.();
      this.#slotFreed = undefined;
    });
  }

  async #execute(held: HeldJob): Promise<void> {
    const { job } = held;
    const handler = this.#handlers.get(job.task_name);
    let outcome: Outcome;
    if (!handler) {
      outcome = { error: `no handler for task ${JSON.stringify(job.task_name)} on this worker`, retryable: false };
    } else {
      try {
        const progress = (value: unknown) => this.#progress(held, value);
        const result = await traced(job, () => handler(job.payload as never, { job, signal: held.controller.signal, progress }));
        outcome = { result: result === undefined ? null : result };
      } catch (error) {
        outcome = failure(error);
      }
    }
    if (held.lost) return; // the lease is void: the server already moved the job on (cancelled, reclaimed)
    await this.#settle(held, outcome);
  }

  async #settle(held: HeldJob, outcome: Outcome): Promise<void> {
    const { id, lease_token } = held.job;
    const path = { job_id: id };
    // complete/fail may be repeated: a duplicate is answered `lease_lost`, never applied twice.
    try {
      if ("result" in outcome) {
        await this.#transport.call(
          (signal) => this.#transport.api.POST("/v1/worker/jobs/{job_id}/complete", {
            params: { path },
            body: { lease_token, result: outcome.result },
            signal,
          }),
          { safe: true },
        );
      } else {
        const body = {
          lease_token,
          error: outcome.error,
          retryable: outcome.retryable,
          ...(outcome.retryAfterSeconds === undefined ? {} : { retry_after_seconds: outcome.retryAfterSeconds }),
        };
        await this.#transport.call(
          (signal) => this.#transport.api.POST("/v1/worker/jobs/{job_id}/fail", { params: { path }, body, signal }),
          { safe: true },
        );
      }
    } catch (error) {
      if (!(error instanceof LeaseLostError)) this.#options.onError(error, held.job);
    }
  }

  async #heartbeat(held: HeldJob): Promise<void> {
    if (held.heartbeating || held.lost) return;
    held.heartbeating = true;
    try {
      await this.#transport.call(
        (signal) => this.#transport.api.POST("/v1/worker/jobs/{job_id}/heartbeat", {
          params: { path: { job_id: held.job.id } },
          body: { lease_token: held.job.lease_token, lease_seconds: this.#options.leaseSeconds },
          signal,
        }),
        { safe: true },
      );
    } catch (error) {
      if (error instanceof LeaseLostError || error instanceof NotFoundError) {
        held.lost = true;
        held.abort(error);
      } else {
        this.#options.onError(error, held.job);
      }
    } finally {
      held.heartbeating = false;
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

  /** Wait for held jobs; past the grace period, abort them and give them back to the queue. */
  async #drain(): Promise<void> {
    const all = () => Promise.all([...this.#held.values()].map((held) => held.settled));
    const grace = new AbortController();
    const timer = sleep(this.#options.shutdownGraceMs, grace.signal).then(
      () => "late" as const,
      () => "done" as const,
    );
    const first = await Promise.race([all().then(() => "done" as const), timer]);
    grace.abort();
    if (first === "done") return;
    await Promise.all(
      [...this.#held.values()].map(async (held) => {
        held.abort(new ShutdownError("the worker stopped before the job finished"));
        held.lost = true; // whatever the handler does next, this worker no longer reports on the job
        held.clearTimers();
        await this.#settle(held, { error: "the worker stopped before the job finished", retryable: true, retryAfterSeconds: 0 });
      }),
    );
  }
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
  heartbeats: ReturnType<typeof setInterval> | undefined;
  deadline: ReturnType<typeof setTimeout> | undefined;
  heartbeating = false;
  lost = false;
  settled: Promise<void> = Promise.resolve();

  constructor(readonly job: LeasedJob) {}

  abort(reason: unknown): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }

  clearTimers(): void {
    clearInterval(this.heartbeats);
    clearTimeout(this.deadline);
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
