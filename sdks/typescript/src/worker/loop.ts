/**
 * `WorkerLoop`: the lease/run/ack loop behind `Worker`, over a `LeaseSource` (the worker routes over HTTP in a
 * worker; a scripted source in the loop's tests) and a `Clock`.
 *
 * - **Slots and prefetch**: at most `concurrency` handlers run at once, and more jobs are leased ahead and wait
 *   their turn, so a free slot never waits for a round trip: by default as many as the slots get through in two
 *   lease round trips (task durations and round trips are measured), at most 700 — short tasks are claimed by
 *   the hundred, long ones hardly ahead at all. A lease asks for many jobs at once, and only once half the places
 *   are free.
 * - **Batched acks**: outcomes are recorded in batches sent when `ackBatch` are ready or `ackIntervalMs` after
 *   the first, one call at a time — or at once when no more can join the batch soon (no job is held any more, or
 *   leasing waits for these acks). While a whole capacity of outcomes waits for its acks (a slow server), no more
 *   jobs are leased: they would only wait with them. A job whose outcome was still waiting in a batch when the
 *   process died is delivered again once its lease expires (at-least-once).
 * - **Batched heartbeats**: one call extends every held lease, waiting ones too. A lease found lost (the job was
 *   cancelled, or reclaimed after expiring) aborts its handler's signal, or drops the waiting job; nothing is
 *   reported for it afterwards.
 * - **Draining**: `stop()` leases nothing more (a lease in flight is aborted), runs every held job for up to
 *   `shutdownGraceMs`, then aborts the signals of the ones still running and hands them back to the queue, sends
 *   every outcome and resolves. `quit()` ends the grace period at once.
 * - **A refused key** (a lease, ack or heartbeat rejected with `AuthenticationError` or `PermissionDeniedError`)
 *   is not retried: the loop stops, logs one error, and the promise of `start()` rejects with it.
 */

import { AuthenticationError, LeaseLostError, NotFoundError, PermissionDeniedError } from "../errors.js";
import { type Outcome, SHUT_DOWN, type WorkerLogger, failure, report } from "../outcomes.js";
import { Table } from "../table.js";
import { traced } from "../tracing.js";
import type { LeasedJob } from "../types.js";
import { type Clock, sleep, systemClock } from "./clock.js";
import { DeadlineError, HeldJob, JobContext, ShutdownError, type TaskHandler } from "./context.js";

/** Where a `WorkerLoop` gets jobs and records what became of them. */
export interface LeaseSource {
  /**
   * Up to `maxJobs` jobs of the worker's tasks; when none is claimable, wait a while for work (possibly answering
   * none). When `signal` aborts (the worker stops) it rejects at once, and the jobs it claimed go back to the queue.
   */
  lease(maxJobs: number, signal: AbortSignal): Promise<LeasedJob[]>;
  /** Record the outcomes (at most `MAX_BATCH`); a repeat is never applied twice. On rejection they are left to their leases' expiry. */
  ack(outcomes: Recorded[]): Promise<void>;
  /** Extend the leases, `[job id, lease token]` pairs (at most `MAX_BATCH`); per item, whether it still held. */
  heartbeat(leases: [string, string][]): Promise<boolean[]>;
  /**
   * Extend one job's lease now and record `value` as its progress; rejects with a `LeaseLostError` or a
   * `NotFoundError` when the lease no longer holds (the loop then aborts the job's signal with that error).
   */
  progress(job: LeasedJob, value: unknown): Promise<void>;
  /** The loop has stopped and every outcome is sent: let go of idle connections. */
  close(): void;
}

/** An outcome to record: the job, the lease it ran under, and how it ended. */
export interface Recorded {
  id: string;
  lease_token: string;
  outcome: Outcome;
}

/** The loop's settings, every default already applied (see `WorkerOptions` for their meaning). */
export interface LoopSettings {
  concurrency: number;
  prefetch: number | undefined;
  ackBatch: number;
  ackIntervalMs: number;
  heartbeatMs: number;
  shutdownGraceMs: number;
  workerId: string;
  /** For the startup line: the source decides what it leases. */
  queues: readonly string[];
  onError: (error: unknown, job?: LeasedJob) => void;
  logger: WorkerLogger;
  logJobs: boolean;
}

/** The most items the server takes in one lease, ack or heartbeat. */
export const MAX_BATCH = 1000;
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
/** How many of the latest ack sizes `ackBatches` keeps (at least; up to twice as many between trims). */
const ACK_BATCHES_KEPT = 1000;

export class WorkerLoop {
  readonly #source: LeaseSource;
  readonly #handlers: ReadonlyMap<string, TaskHandler<never>>;
  readonly #settings: LoopSettings;
  readonly #clock: Clock;
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
  #ackTimer: unknown;
  #heartbeats: unknown;
  #heartbeating = false;
  /** Task names already warned about: a job of a task this worker has no handler for. */
  readonly #unknownTasks = new Set<string>();
  /** Why the loop stopped on its own: the server refused the key. */
  #failure: unknown;
  /** Ends the drain's grace period now (a second signal). */
  #quit: (() => void) | undefined;
  #quitting = false;
  #stopHint = "";
  /** Aborts a lease call in flight when the loop stops. */
  #leaseCall: AbortController | undefined;
  #stopping = new AbortController();
  #running: Promise<void> | undefined;
  /** Wakes the lease loop: a slot freed, or the loop is stopping. Never a listener on a long-lived signal. */
  #wake: (() => void) | undefined;
  /** Wakes the drain: every held job has ended. */
  #idle: (() => void) | undefined;
  #taskMs: number | undefined;
  #leaseMs: number | undefined;
  /** The sizes of the last `ACK_BATCHES_KEPT` acks sent, oldest first (for tests and metrics). */
  readonly ackBatches: number[] = [];

  constructor(source: LeaseSource, handlers: ReadonlyMap<string, TaskHandler<never>>, settings: LoopSettings, clock: Clock = systemClock) {
    this.#source = source;
    this.#handlers = handlers;
    this.#settings = settings;
    this.#clock = clock;
  }

  /** How many jobs the loop holds right now: running, or leased ahead and waiting for a slot. */
  get activeJobs(): number {
    return this.#held.size + this.#waiting.length;
  }

  /** How many handlers run right now. */
  get runningJobs(): number {
    return this.#held.size;
  }

  /** Start leasing; the promise resolves once the loop has stopped and every held job is settled. */
  start(): Promise<void> {
    if (this.#running) throw new Error("the worker is already running");
    if (this.#handlers.size === 0) throw new Error("register a task with worker.task(name, handler) before start()");
    this.#stopping = new AbortController();
    this.#failure = undefined;
    this.#quitting = false;
    this.#stopHint = "";
    const { workerId, queues, concurrency, logger, heartbeatMs } = this.#settings;
    logger.info(
      `worker ${workerId}: started; queues: ${queues.join(", ")}; tasks: ${[...this.#handlers.keys()].sort().join(", ")}; concurrency ${concurrency}`,
    );
    this.#heartbeats = this.#clock.setInterval(() => void this.#heartbeat(), heartbeatMs);
    this.#running = this.#loop().then(() => {
      if (this.#failure !== undefined) throw this.#failure;
    });
    return this.#running;
  }

  /** Stop gracefully (see the module's comment); `hint` ends the "finishing N jobs" line (e.g. how to quit sooner). */
  async stop(hint = ""): Promise<void> {
    if (!this.#running) return;
    this.#stopHint = hint;
    this.#halt();
    try {
      await this.#running;
    } catch (error) {
      if (error !== this.#failure) throw error; // a refused key rejects start()'s promise, not stop()'s
    } finally {
      this.#running = undefined;
    }
  }

  /** Stop now: what still runs is aborted and handed back, as when the grace period ends. */
  quit(): void {
    this.#quitting = true;
    this.#halt();
    const quit = this.#quit;
    this.#quit = undefined;
    quit?.();
  }

  /** Stop leasing (a lease call in flight is ended: the server hands back what it claimed for it). */
  #halt(): void {
    if (!this.#stopping.signal.aborted) this.#stopping.abort(new ShutdownError("the worker is stopping"));
    this.#leaseCall?.abort(new ShutdownError("the worker is stopping"));
    this.#wakeLoop();
  }

  /** How many jobs to hold beyond the running ones now. */
  #ahead(): number {
    const { prefetch, concurrency } = this.#settings;
    if (prefetch !== undefined) return prefetch;
    if (this.#taskMs === undefined || this.#leaseMs === undefined) return concurrency;
    const perMs = concurrency / Math.max(this.#taskMs, 0.001);
    return Math.min(MAX_AHEAD, Math.floor(2 * perMs * this.#leaseMs) + 1);
  }

  /** The most jobs to hold: running and waiting. */
  #capacity(): number {
    return this.#settings.concurrency + this.#ahead();
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
      const began = this.#clock.now();
      try {
        jobs = await this.#lease(want);
        failures = 0;
      } catch (error) {
        if (this.#refused(error) || stopping.aborted) break;
        this.#settings.onError(error);
        failures += 1;
        await sleep(this.#clock, Math.min(500 * 2 ** failures, 15_000), stopping).catch(() => undefined);
        continue;
      }
      if (jobs.length === want) this.#leaseMs = average(this.#leaseMs, Math.min(this.#clock.now() - began, 1000));
      for (const job of jobs) this.#take(job); // even when stopping: they are held now, and held jobs finish
    }
    await this.#drain();
  }

  /**
   * Aborted by stop(): a long-poll whose client left claims nothing more, and the server hands back (not counted
   * as a delivery) what it claimed for it.
   */
  async #lease(maxJobs: number): Promise<LeasedJob[]> {
    const call = (this.#leaseCall = new AbortController());
    try {
      return await this.#source.lease(maxJobs, call.signal);
    } finally {
      this.#leaseCall = undefined;
    }
  }

  /** A refused key (401, 403): retrying cannot help, so the loop stops and says why, once. */
  #refused(error: unknown): boolean {
    if (!(error instanceof AuthenticationError || error instanceof PermissionDeniedError)) return false;
    if (this.#failure === undefined) {
      this.#failure = error;
      this.#settings.logger.error(
        `worker ${this.#settings.workerId}: the server refused the worker key (${error.message}); stopping. ` +
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
    if (this.#held.size < this.#settings.concurrency) this.#run(job);
    else this.#waiting.push(job);
  }

  #run(job: LeasedJob): void {
    const held = new HeldJob(job);
    this.#held.set(job.lease_token, held);
    const clock = this.#clock;
    if (job.deadline) {
      const ms = Date.parse(job.deadline) - clock.wall();
      held.deadline = clock.setTimeout(() => held.abort(new DeadlineError(`job ${job.id} passed its deadline`)), Math.max(ms, 0));
    }
    const began = clock.now();
    void this.#execute(held).then((outcome) => {
      clock.clear(held.deadline);
      this.#held.delete(job.lease_token);
      const ms = clock.now() - began;
      if (held.lost) {
        // The lease is void: the server already moved the job on (cancelled, reclaimed).
        if (this.#leases.get(job.id) === job.lease_token) this.#leases.delete(job.id);
      } else {
        this.#taskMs = average(this.#taskMs, ms);
        this.#record({ id: job.id, lease_token: job.lease_token, outcome });
        report(this.#settings, job, outcome, ms);
      }
      this.#ended();
    });
  }

  /** A running job ended: start waiting ones, tell the lease loop and the drain. */
  #ended(): void {
    while (this.#waiting.length > 0 && this.#held.size < this.#settings.concurrency) {
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
      this.#settings.logger.warn(
        `worker ${this.#settings.workerId}: leased job ${job.id} of task ${JSON.stringify(job.task_name)}, which this worker ` +
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
    const now = this.#outcomes.length >= this.#settings.ackBatch || this.activeJobs === 0 || this.#unacked >= this.#capacity();
    if (now) this.#flush();
    else this.#ackTimer ??= this.#clock.setTimeout(() => this.#flush(), this.#settings.ackIntervalMs);
  }

  /** Send the outcomes that are ready, one call at a time; what comes meanwhile goes in the next. */
  #flush(): Promise<void> {
    this.#clock.clear(this.#ackTimer);
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
    try {
      await this.#source.ack(batch);
    } catch (error) {
      // Left to the leases' expiry: the jobs are delivered again.
      if (!this.#refused(error)) this.#settings.onError(error);
    } finally {
      for (const { id, lease_token } of batch) {
        if (this.#leases.get(id) === lease_token) this.#leases.delete(id);
      }
      this.#unacked -= batch.length;
      this.#offerRoom();
    }
  }

  /** One call extends every lease held; a lost one tells its handler (or drops the waiting job). */
  async #heartbeat(): Promise<void> {
    if (this.#heartbeating || this.#leases.size === 0) return;
    this.#heartbeating = true;
    try {
      const held = this.#leases.entries();
      for (let start = 0; start < held.length; start += MAX_BATCH) {
        const chunk = held.slice(start, start + MAX_BATCH);
        let alive: boolean[];
        try {
          alive = await this.#source.heartbeat(chunk);
        } catch (error) {
          // Unreachable for now: the leases may still hold; try again next time.
          if (!this.#refused(error)) this.#settings.onError(error);
          continue;
        }
        for (const [index, holds] of alive.entries()) {
          const [id, token] = chunk[index] ?? [];
          if (!holds && id !== undefined && token !== undefined) this.#lost(id, token);
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
      await this.#source.progress(held.job, value);
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
    const { workerId, shutdownGraceMs, logger } = this.#settings;
    if (this.activeJobs > 0) {
      logger.info(`worker ${workerId}: finishing ${this.activeJobs} jobs (up to ${shutdownGraceMs / 1000} s)${this.#stopHint}`);
      const idle = new Promise<"done">((resolve) => {
        this.#idle = () => resolve("done");
      });
      const quit = new Promise<"late">((resolve) => {
        this.#quit = () => resolve("late");
        if (this.#quitting) resolve("late");
      });
      const grace = new AbortController();
      const timer = sleep(this.#clock, shutdownGraceMs, grace.signal).then(
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
          this.#clock.clear(held.deadline);
          this.#record({ id: held.job.id, lease_token: held.job.lease_token, outcome: SHUT_DOWN });
        }
      }
    }
    await this.#flush();
    this.#clock.clear(this.#heartbeats);
    this.#heartbeats = undefined;
    this.#source.close();
    logger.info(`worker ${workerId}: stopped`);
  }
}

function completed(result: unknown): Outcome {
  return { result: result === undefined ? null : result };
}

function average(current: number | undefined, sample: number): number {
  return current === undefined ? sample : current + SMOOTHING * (sample - current);
}
