/**
 * `WorkerLoop`: the lease/run/ack loop behind `Worker`, over a `LeaseSource` (the worker routes over HTTP in a
 * worker; a scripted source in the loop's tests) and a `Clock`. This module holds the jobs and wires the parts, one
 * module each, named as in the Python loop (`sdks/worker/queueflow_worker/`):
 *
 * - **Slots and prefetch** (`leasing.ts`): at most `concurrency` handlers run at once, and more jobs are leased ahead
 *   and wait their turn, so a free slot never waits for a round trip: by default as many as the slots get through in
 *   two lease round trips (task durations and round trips are measured), at most 500 — short tasks are claimed by
 *   the hundred, long ones hardly ahead at all. A lease asks for many jobs at once, and only once half the places
 *   are free (or 1,000, the most one lease brings).
 * - **Overlapping leases** (`leasing.ts`): while the backlog is deep (the last lease came back full),
 *   `LEASES_IN_FLIGHT` (2) leases are in flight at once, each asked once a quarter of the places are free: one
 *   claim's round trip, then one ack's, in turn no longer leave the server and PostgreSQL idle part of the time. Each
 *   full answer allows one overlap; when a lease comes back short (or fails), one lease at a time again, so an idle
 *   worker parks one long-poll.
 * - **Batched acks** (`acks.ts`): outcomes are sent in batches, one call at a time; while a whole capacity of them
 *   waits for its acks (a slow server), no more jobs are leased — nor, after a lease that came back short, while any
 *   does (`Leasing.waitsForAcks`). An ack or a release that fails with no answer or a 5xx (the server restarting) is
 *   made again, with backoff, for as long as a lease it carries could still hold (`retries.ts`).
 * - **Batched heartbeats** (`heartbeats.ts`): one call extends every held lease, waiting ones too. A lease found lost
 *   (the job was cancelled, or reclaimed after expiring) aborts its handler's signal, or drops the waiting job;
 *   nothing is reported for it afterwards.
 * - **No job started too late**: a held job is never started once its lease, or its deadline less a typical run of
 *   its task, is within `marginMs` — as the worker's own monotonic clock counts them from when it sent the lease
 *   request (`timing.ts`): it is released instead (`releases.ts`), at once, for another worker, no retry counted; one
 *   whose deadline would pass while it waits is released before it does (`ExpiryWatch`). The prefetch never exceeds
 *   what the slots start within half a lease or half the shortest timeout lately leased.
 * - **Stopping**: `stop()` leases nothing more (every lease in flight, a long-poll too, is let to answer, for up to
 *   `LEASE_ANSWER_WAIT_MS`: its answer may be on its way), releases at once every held job not started (and what the
 *   leases in flight still bring), lets the running ones finish for up to `shutdownGraceMs`, then aborts the signals
 *   of the ones still running and releases their jobs too, sends every outcome and resolves. `quit()` ends the grace
 *   period at once.
 * - **A refused key** (a lease, ack or heartbeat rejected with `AuthenticationError` or `PermissionDeniedError`)
 *   is not retried: the loop stops, logs one error, and the promise of `start()` rejects with it.
 */

import { AuthenticationError, LeaseLostError, PermissionDeniedError } from "../errors.js";
import { report } from "../outcomes.js";
import { Table } from "../table.js";
import type { LeasedJob } from "../types.js";
import { Acks } from "./acks.js";
import { type Clock, sleep, systemClock } from "./clock.js";
import { DeadlineError, HeldJob, ShutdownError, type TaskHandler } from "./context.js";
import { Heartbeats } from "./heartbeats.js";
import { Leasing } from "./leasing.js";
import type { LeaseSource, LoopSettings, Recorded } from "./ports.js";
import { Releases } from "./releases.js";
import { LeaseHorizon, persist } from "./retries.js";
import { Tasks } from "./tasks.js";
import { ExpiryWatch, MARGIN_MS, Measures, type Waiting } from "./timing.js";

export { LEASE_ANSWER_WAIT_MS } from "./leasing.js";
export { MAX_BATCH } from "./ports.js";
export { LEASES_IN_FLIGHT } from "./timing.js";
export type { LeaseSource, LoopSettings, Recorded } from "./ports.js";

export class WorkerLoop {
  readonly #source: LeaseSource;
  readonly #handlers: ReadonlyMap<string, TaskHandler<never>>;
  readonly #settings: LoopSettings;
  readonly #clock: Clock;
  /** Running jobs by lease token: one job may be here twice (an expired lease's delivery and the new one). */
  readonly #held = new Table<HeldJob>();
  /** Jobs leased ahead, waiting for a slot. */
  #waiting: Waiting[] = [];
  /** Every job held until its outcome is recorded: id → lease token (what a heartbeat extends). */
  readonly #leases = new Table<string>();
  readonly #acks: Acks;
  /** Also what every running job's context does with its lease (one object for all: none is made per job). */
  readonly #heartbeats: Heartbeats;
  #heartbeatTimer: unknown;
  readonly #tasks: Tasks;
  readonly #leasing: Leasing;
  /** Why the loop stopped on its own: the server refused the key. */
  #failure: unknown;
  /** Ends the drain's grace period now (a second signal). */
  #quit: (() => void) | undefined;
  #quitting = false;
  #stopHint = "";
  #stopping = new AbortController();
  #running: Promise<void> | undefined;
  /** Wakes the drain: every held job has ended. */
  #idle: (() => void) | undefined;
  readonly #measures: Measures;
  readonly #expiry: ExpiryWatch;
  readonly #releases: Releases;
  /** No lease held lasts past this (the loop's clock): what an ack or a release is repeated up to. */
  readonly #horizon: LeaseHorizon;
  /** Aborted by `quit()`: repeats of acks and releases give up. */
  #abandon = new AbortController();
  /** The sizes of the latest acks sent, oldest first (for tests and metrics). */
  readonly ackBatches: number[];

  constructor(source: LeaseSource, handlers: ReadonlyMap<string, TaskHandler<never>>, settings: LoopSettings, clock: Clock = systemClock) {
    this.#source = source;
    this.#handlers = handlers;
    this.#settings = settings;
    this.#clock = clock;
    this.#tasks = new Tasks(handlers, settings);
    this.#horizon = new LeaseHorizon(settings.leaseMs);
    this.#releases = new Releases(source, settings, (error) => this.#refused(error), (call) => this.#persist(call));
    this.#acks = new Acks(source, settings, clock, {
      activeJobs: () => this.activeJobs,
      waitsForAcks: () => this.#leasing.waitsForAcks(),
      refused: (error) => this.#refused(error),
      persist: (call) => this.#persist(call),
      acked: (batch) => this.#acked(batch),
    });
    this.ackBatches = this.#acks.batches;
    this.#heartbeats = new Heartbeats(source, settings, clock, this.#horizon, {
      leases: () => this.#leases.entries(),
      waiting: () => this.#waiting,
      refused: (error) => this.#refused(error),
      lost: (id, token) => this.#lost(id, token),
    });
    const marginMs = Math.min(settings.marginMs ?? MARGIN_MS, settings.leaseMs / 4);
    this.#measures = new Measures(settings.concurrency, settings.prefetch, settings.leaseMs, marginMs);
    this.#expiry = new ExpiryWatch(clock, this.#measures, () => this.#waiting, (stale) => this.#expire(stale));
    this.#leasing = new Leasing(source, settings, clock, this.#horizon, this.#measures, {
      activeJobs: () => this.activeJobs,
      unacked: () => this.#acks.unacked,
      refused: (error) => this.#refused(error),
      beat: () => void this.#heartbeats.beat(),
      take: (entries) => this.#take(entries),
      giveBack: (jobs, why) => this.#giveBack(jobs, why),
      failed: (error) => {
        this.#failure ??= error;
        this.#halt();
      },
    });
  }

  /** How many jobs the loop holds right now: running, or leased ahead and waiting for a slot. */
  get activeJobs(): number {
    return this.#held.size + this.#waiting.length;
  }

  /** Jobs handed back to the queue so far (for tests and metrics). */
  get released(): number {
    return this.#releases.count;
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
    if (this.#abandon.signal.aborted) this.#abandon = new AbortController(); // after a quit
    this.#leasing.reset();
    this.#failure = undefined;
    this.#quitting = false;
    this.#stopHint = "";
    const { workerId, queues, concurrency, logger, heartbeatMs } = this.#settings;
    logger.info(
      `worker ${workerId}: started; queues: ${queues.join(", ")}; tasks: ${[...this.#handlers.keys()].sort().join(", ")}; concurrency ${concurrency}`,
    );
    this.#heartbeatTimer = this.#clock.setInterval(() => void this.#heartbeats.beat(), heartbeatMs);
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
    this.#abandon.abort();
    this.#halt();
    const quit = this.#quit;
    this.#quit = undefined;
    quit?.();
  }

  /**
   * Stop leasing (every lease call in flight is told: a parked long-poll ends, one whose answer may be on its way is
   * let to arrive for up to `LEASE_ANSWER_WAIT_MS`) and release every job not started.
   */
  #halt(): void {
    if (!this.#stopping.signal.aborted) this.#stopping.abort(new ShutdownError("the worker is stopping"));
    this.#leasing.halt();
    this.#giveBack(this.#waiting.splice(0).map(({ job }) => job), "the worker is stopping");
    this.#ended();
    this.#leasing.wake();
  }

  /** The lease loop (`leasing.ts`), then the drain. */
  async #loop(): Promise<void> {
    await this.#leasing.run(this.#stopping.signal);
    await this.#drain();
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

  /** Jobs a lease brought: they wait for a slot (what the free slots can start, starts now) and are watched. */
  #take(entries: Waiting[]): void {
    for (const entry of entries) {
      const { job } = entry;
      const earlier = this.#leases.get(job.id);
      // Delivered again while an earlier delivery is still here (its lease expired while it waited or ran, and the
      // janitor handed the job out anew): that lease is lost, so its delivery is dropped.
      if (earlier !== undefined && earlier !== job.lease_token) this.#lost(job.id, earlier);
      this.#leases.set(job.id, job.lease_token);
      this.#waiting.push(entry);
    }
    this.#ended(); // starts what it can, and wakes the loop if there is room for another lease
    this.#expiry.taken(entries);
  }

  /** Give jobs back to the queue (in the background; the drain waits for it): they are no longer held. */
  #giveBack(jobs: LeasedJob[], why: string): void {
    for (const { id, lease_token } of jobs) {
      if (this.#leases.get(id) === lease_token) this.#leases.delete(id);
    }
    this.#releases.giveBack(jobs, why);
  }

  /** The expiry watch fired: these waiting jobs can no longer start (`Measures.latestStart`), so they go back. */
  #expire(stale: Set<Waiting>): void {
    this.#waiting = this.#waiting.filter((entry) => !stale.has(entry));
    this.#giveBack([...stale].map(({ job }) => job), "too close to their leases' end or deadlines to start");
    this.#ended();
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
    void this.#tasks.execute(held, this.#heartbeats).then((outcome) => {
      clock.clear(held.deadline);
      this.#held.delete(job.lease_token);
      const ms = clock.now() - began;
      if (held.lost) {
        // The lease is void: the server already moved the job on (cancelled, reclaimed).
        if (this.#leases.get(job.id) === job.lease_token) this.#leases.delete(job.id);
      } else {
        this.#measures.taskRan(job.task_name, ms);
        this.#acks.record({ id: job.id, lease_token: job.lease_token, outcome });
        report(this.#settings, job, outcome, ms);
      }
      this.#ended();
    });
  }

  /**
   * A running job ended, or jobs arrived: start waiting ones in free slots — but not one too close to its lease's
   * end or deadline: that is released — and tell the expiry watch, the lease loop and the drain.
   */
  #ended(): void {
    const stale: LeasedJob[] = [];
    if (this.#waiting.length > 0 && this.#held.size < this.#settings.concurrency) {
      const now = this.#clock.now();
      const { marginMs } = this.#measures;
      while (this.#waiting.length > 0 && this.#held.size < this.#settings.concurrency && !this.#stopping.signal.aborted) {
        const next = this.#waiting.shift();
        if (!next) break;
        // Without a deadline only the lease counts: no call for the common case.
        const late = next.leaseUntil - marginMs <= now || (next.deadlineUntil !== undefined && this.#measures.latestStart(next) <= now);
        if (late) stale.push(next.job);
        else this.#run(next.job);
      }
    }
    this.#giveBack(stale, "too close to their leases' end or deadlines to start");
    if (this.activeJobs === 0) {
      const idle = this.#idle;
      this.#idle = undefined;
      idle?.();
    }
    this.#leasing.offer();
  }

  /** An ack answered (or was given up on): its jobs are no longer held, and a lease may have room again. */
  #acked(batch: Recorded[]): void {
    for (const { id, lease_token } of batch) {
      if (this.#leases.get(id) === lease_token) this.#leases.delete(id);
    }
    this.#leasing.offer();
  }

  #persist<T>(call: () => Promise<T>): Promise<T> {
    return persist(call, this.#clock, this.#horizon, this.#abandon.signal);
  }

  #lost(id: string, token: string): void {
    if (this.#leases.get(id) !== token) return; // settled meanwhile
    const running = this.#held.get(token);
    if (running) {
      running.lost = true;
      running.abort(new LeaseLostError(409, "lease_lost", `job ${id}: the lease was lost (cancelled or reclaimed)`));
      return;
    }
    const waiting = this.#waiting.findIndex(({ job }) => job.id === id && job.lease_token === token);
    if (waiting >= 0) {
      this.#waiting.splice(waiting, 1);
      this.#leases.delete(id);
      this.#ended();
    }
  }

  /** Let the running jobs finish; past the grace period, abort the rest and give them back to the queue. */
  async #drain(): Promise<void> {
    const { workerId, shutdownGraceMs, logger } = this.#settings;
    this.#expiry.stop();
    if (this.#held.size > 0) {
      logger.info(`worker ${workerId}: finishing ${this.#held.size} running jobs (up to ${shutdownGraceMs / 1000} s)${this.#stopHint}`);
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
        const late = [...this.#held.values()];
        for (const held of late) {
          held.abort(new ShutdownError("the worker stopped before the job finished"));
          held.lost = true; // whatever the handler does next, this worker no longer reports on the job
          this.#clock.clear(held.deadline);
        }
        this.#giveBack(late.map(({ job }) => job), "still running when the worker stopped");
      }
    }
    await this.#releases.settled();
    await this.#acks.flush();
    this.#clock.clear(this.#heartbeatTimer);
    this.#heartbeatTimer = undefined;
    this.#source.close();
    logger.info(`worker ${workerId}: stopped`);
  }
}
