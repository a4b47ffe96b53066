/**
 * Stand-ins for what the worker loop talks to: a lease source a test scripts, a clock it advances (no test waits
 * for time to pass), and a logger that keeps its lines.
 */

import { QueueFlow } from "../src/client.js";
import type { WorkerLogger } from "../src/outcomes.js";
import { traced } from "../src/tracing.js";
import type { NewStep } from "../src/steps.js";
import type { LeasedJob, WorkflowStep } from "../src/types.js";
import type { Clock, Timer } from "../src/worker/clock.js";
import { type TaskHandler, asPending, localContext } from "../src/worker/context.js";
import { type LeaseSource, type LoopSettings, type Recorded, WorkerLoop } from "../src/worker/loop.js";

/** Let every promise that can settle now settle: one turn of the event loop runs all pending microtasks. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

interface Scheduled {
  at: number;
  order: number;
  every: number | undefined;
  callback: () => void;
}

/** Time stands still until `advance` moves it; timers due by then fire in order, each once the last one's work settled. */
export class FakeClock implements Clock {
  #now = 0;
  #order = 0;
  readonly #timers = new Set<Scheduled>();
  /** The time of day at `now() === 0`. */
  static readonly epoch = Date.parse("2026-12-03T12:00:00Z");

  now(): number {
    return this.#now;
  }

  wall(): number {
    return FakeClock.epoch + this.#now;
  }

  setTimeout(callback: () => void, ms: number): Timer {
    return this.#add(callback, ms, undefined);
  }

  setInterval(callback: () => void, ms: number): Timer {
    return this.#add(callback, ms, ms);
  }

  clear(timer: Timer): void {
    this.#timers.delete(timer as Scheduled);
  }

  /** Timers set and not yet fired or cleared. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Resolves after `ms` of this clock's time. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.setTimeout(resolve, ms));
  }

  async advance(ms: number): Promise<void> {
    const until = this.#now + ms;
    for (;;) {
      await settle();
      const next = [...this.#timers].filter((timer) => timer.at <= until).sort((a, b) => a.at - b.at || a.order - b.order)[0];
      if (!next) break;
      this.#now = next.at;
      if (next.every === undefined) this.#timers.delete(next);
      else next.at += Math.max(next.every, 1);
      next.callback();
    }
    this.#now = until;
    await settle();
  }

  #add(callback: () => void, ms: number, every: number | undefined): Scheduled {
    const timer = { at: this.#now + Math.max(ms, 0), order: this.#order++, every, callback };
    this.#timers.add(timer);
    return timer;
  }
}

/** A promise with its resolve and reject functions outside. */
export function gate<T = void>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (reason: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A leased job of task `t` (or `fields.task_name`), its lease token `<id>-1` unless given. */
export function leased(id: string, fields: Partial<LeasedJob> = {}): LeasedJob {
  return localContext(fields.task_name ?? "t", "default", fields.payload ?? {}, { id, lease_token: `${id}-1`, delivery_count: 1, ...fields }).job;
}

/** `count` jobs `j0`, `j1`, … of task `t`. */
export function jobs(count: number, fields: Partial<LeasedJob> = {}): LeasedJob[] {
  return Array.from({ length: count }, (_, n) => leased(`j${n}`, fields));
}

/**
 * A lease source whose answers the test scripts. A lease answers from `backlog` (after `roundTripMs` of the clock,
 * when given one); with the backlog empty it parks until `deliver` brings jobs or its signal aborts (then it
 * rejects, as a long-poll the worker gave up on). Every call is recorded.
 */
export class ScriptedSource implements LeaseSource {
  readonly backlog: LeasedJob[];
  /** `maxJobs` of each lease, in order, and the clock's time it was asked at. */
  readonly asked: number[] = [];
  readonly askedAt: number[] = [];
  /** Leases waiting for an answer (parked, or on their round trip), and the most there were at once. */
  leasing = 0;
  mostLeasing = 0;
  /** The most leases parked at once, waiting for work. */
  mostParked = 0;
  /** Each lease call takes the next of these, if any, and rejects with it. */
  readonly leaseErrors: unknown[] = [];
  /** What each ack carried. */
  readonly acks: Recorded[][] = [];
  /** Acks wait for this while it is set (a slow server); `ackError` makes them reject. */
  ackGate: Promise<void> | undefined;
  ackError: unknown;
  /** What each heartbeat carried; a lease token in `lost` is answered lost. */
  readonly beats: [string, string][][] = [];
  /** What each release carried. */
  readonly releases: [string, string][][] = [];
  readonly lost = new Set<string>();
  /** When set, heartbeats reject with it (the server is away: no lease is extended). */
  heartbeatError: unknown;
  /** Each progress report, and the error the next ones reject with, if set. */
  readonly progressed: [string, unknown][] = [];
  progressError: unknown;
  closed = 0;
  #parked: { maxJobs: number; answer: (jobs: LeasedJob[]) => void }[] = [];

  constructor(
    backlog: LeasedJob[] = [],
    readonly clock?: FakeClock,
    readonly roundTripMs = 0,
  ) {
    this.backlog = [...backlog];
  }

  /** Leases parked now, waiting for work. */
  get parked(): number {
    return this.#parked.length;
  }

  /** Everything acked so far, by job id. */
  get outcomes(): Map<string, Recorded> {
    return new Map(this.acks.flat().map((recorded) => [recorded.id, recorded]));
  }

  lease(maxJobs: number, signal: AbortSignal, _cut?: AbortSignal): Promise<LeasedJob[]> {
    this.asked.push(maxJobs);
    this.askedAt.push(this.clock?.now() ?? 0);
    if (this.leaseErrors.length > 0) return Promise.reject(this.leaseErrors.shift());
    this.leasing += 1;
    this.mostLeasing = Math.max(this.mostLeasing, this.leasing);
    return new Promise<LeasedJob[]>((resolve, reject) => {
      let answered = false;
      const answer = (jobs: LeasedJob[]) => {
        if (answered) return;
        answered = true;
        signal.removeEventListener("abort", onAbort);
        this.leasing -= 1;
        resolve(jobs);
      };
      const parked = { maxJobs, answer };
      const onAbort = () => {
        answered = true;
        this.#parked = this.#parked.filter((each) => each !== parked);
        this.leasing -= 1;
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      if (this.backlog.length === 0) {
        this.#parked.push(parked);
        this.mostParked = Math.max(this.mostParked, this.#parked.length);
      } else if (this.clock && this.roundTripMs > 0) this.clock.setTimeout(() => {
          if (!answered) answer(this.backlog.splice(0, maxJobs));
        }, this.roundTripMs);
      else answer(this.backlog.splice(0, maxJobs));
    });
  }

  /** Add jobs to the backlog, answering the parked leases with them (the first parked first). */
  deliver(...jobs: LeasedJob[]): void {
    this.backlog.push(...jobs);
    for (const parked of this.#parked.splice(0)) parked.answer(this.backlog.splice(0, parked.maxJobs));
  }

  async ack(outcomes: Recorded[]): Promise<void> {
    this.acks.push(outcomes);
    await this.ackGate;
    if (this.ackError !== undefined) throw this.ackError;
  }

  async heartbeat(leases: [string, string][]): Promise<boolean[]> {
    this.beats.push(leases);
    if (this.heartbeatError !== undefined) throw this.heartbeatError;
    return leases.map(([, token]) => !this.lost.has(token));
  }

  async release(leases: [string, string][]): Promise<boolean[]> {
    this.releases.push(leases);
    return leases.map(() => true);
  }

  /** The ids of every job released so far, in order. */
  get released(): string[] {
    return this.releases.flat().map(([id]) => id);
  }

  async progress(job: LeasedJob, value: unknown): Promise<void> {
    this.progressed.push([job.id, value]);
    if (this.progressError !== undefined) throw this.progressError;
  }

  /** Every `addSteps` call: the job, its lease token and the steps. Answers them as pending steps, or `addStepsError`. */
  readonly added: [id: string, token: string, steps: NewStep[]][] = [];
  addStepsError: unknown;

  async addSteps(job: LeasedJob, steps: NewStep[]): Promise<WorkflowStep[]> {
    this.added.push([job.id, job.lease_token, steps]);
    if (this.addStepsError !== undefined) throw this.addStepsError;
    return asPending(steps, job.workflow_step_id);
  }

  close(): void {
    this.closed += 1;
  }
}

/** A lease call the test answers by hand (`answerByHand`). */
export interface HandLease {
  maxJobs: number;
  answer(jobs: LeasedJob[]): void;
}

/**
 * Make `source`'s leases wait until the test answers them, the oldest first in `calls` (those not answered yet). As
 * `HttpSource`'s, the stop's signal does not end one (its answer may be on its way): `cut` does, rejecting with its
 * reason, which `cutWith` keeps. `source.asked`, `leasing` and `mostLeasing` count them as the source's own.
 */
export function answerByHand(source: ScriptedSource): { calls: HandLease[]; cutWith: unknown[] } {
  const calls: HandLease[] = [];
  const cutWith: unknown[] = [];
  source.lease = (maxJobs: number, _signal: AbortSignal, cut?: AbortSignal): Promise<LeasedJob[]> => {
    source.asked.push(maxJobs);
    source.askedAt.push(source.clock?.now() ?? 0);
    source.leasing += 1;
    source.mostLeasing = Math.max(source.mostLeasing, source.leasing);
    return new Promise((resolve, reject) => {
      const call: HandLease = {
        maxJobs,
        answer: (jobs) => {
          calls.splice(calls.indexOf(call), 1);
          cut?.removeEventListener("abort", onCut);
          source.leasing -= 1;
          resolve(jobs);
        },
      };
      const onCut = () => {
        calls.splice(calls.indexOf(call), 1);
        source.leasing -= 1;
        cutWith.push(cut?.reason);
        reject(cut?.reason);
      };
      cut?.addEventListener("abort", onCut, { once: true });
      calls.push(call);
    });
  };
  return { calls, cutWith };
}

/** The lines a worker logged, by level. */
export class Lines implements WorkerLogger {
  readonly lines: [level: "info" | "warn" | "error", message: string][] = [];
  info(message: string): void {
    this.lines.push(["info", message]);
  }
  warn(message: string): void {
    this.lines.push(["warn", message]);
  }
  error(message: string): void {
    this.lines.push(["error", message]);
  }
  of(level: "info" | "warn" | "error"): string[] {
    return this.lines.filter(([each]) => each === level).map(([, message]) => message);
  }
}

export interface ScriptedLoop {
  loop: WorkerLoop;
  source: ScriptedSource;
  clock: FakeClock;
  logger: Lines;
  /** What the loop told `onError`. */
  errors: unknown[];
}

/** A loop over `backlog` (each lease taking `roundTripMs` of the clock), with `handlers` by task name. */
export function scriptedLoop(
  backlog: LeasedJob[],
  handlers: Record<string, TaskHandler<never>>,
  settings: Partial<LoopSettings> = {},
  roundTripMs = 0,
): ScriptedLoop {
  const clock = new FakeClock();
  const source = new ScriptedSource(backlog, clock, roundTripMs);
  const logger = new Lines();
  const errors: unknown[] = [];
  const loop = new WorkerLoop(
    source,
    new Map(Object.entries(handlers)),
    {
      concurrency: 10,
      prefetch: undefined,
      ackBatch: 100,
      ackIntervalMs: 10,
      leaseMs: 30_000,
      heartbeatMs: 10_000,
      shutdownGraceMs: 30_000,
      workerId: "w",
      queues: ["default"],
      onError: (error) => errors.push(error),
      logger,
      logJobs: false,
      ...settings,
    },
    clock,
  );
  return { loop, source, clock, logger, errors };
}

/**
 * Load what a loop loads on its first job, @opentelemetry/api (a dynamic import: real I/O, which no `settle` waits
 * for), before the tests run.
 */
export async function loadTracing(): Promise<void> {
  await traced(leased("warm-up"), () => null);
}

/** Resolves once `signal` aborts. */
export function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

/** The lease tokens of every outcome acked, in order. */
export function tokens(source: ScriptedSource): string[] {
  return source.acks.flat().map((recorded) => recorded.lease_token);
}

/** Node's warnings (e.g. MaxListenersExceededWarning for listeners leaking onto one AbortSignal), as emitted from now on. */
export function nodeWarnings(): () => Promise<string[]> {
  const warnings: Error[] = [];
  process.on("warning", (warning) => warnings.push(warning));
  return async () => {
    await settle(); // a warning is emitted on the next tick
    return warnings.map((warning) => `${warning.name}: ${warning.message}`);
  };
}

/** A client whose every request is recorded in `sent` and answered with `status` and `body`, as the server would. */
export function answering(status: number, body: unknown): { client: QueueFlow; sent: Request[] } {
  const sent: Request[] = [];
  const fetch = async (input: string | URL | Request): Promise<Response> => {
    sent.push(input as Request);
    const headers = { "content-type": status >= 400 ? "application/problem+json" : "application/json" };
    return new Response(JSON.stringify(body), { status, headers });
  };
  return { client: new QueueFlow({ baseUrl: "http://queueflow.test", fetch, maxRetries: 0 }), sent };
}
