/**
 * `WorkerLoop`: the lease/run/ack loop behind `Worker`, over a `LeaseSource` (the worker routes over HTTP in a
 * worker; a scripted source in the loop's tests) and a `Clock`.
 *
 * - **Slots and prefetch**: at most `concurrency` handlers run at once, and more jobs are leased ahead and wait
 *   their turn, so a free slot never waits for a round trip: by default as many as the slots get through in two
 *   lease round trips (task durations and round trips are measured), at most 500 — short tasks are claimed by
 *   the hundred, long ones hardly ahead at all. A lease asks for many jobs at once, and only once half the places
 *   are free (or 1,000, the most one lease brings).
 * - **Overlapping leases**: while the backlog is deep (the last lease came back full), `LEASES_IN_FLIGHT` (2) leases
 *   are in flight at once, each asked once a quarter of the places are free: one claim's round trip, then one ack's,
 *   in turn no longer leave the server and PostgreSQL idle part of the time. Each full answer allows one overlap;
 *   when a lease comes back short (or fails), one lease at a time again, so an idle worker parks one long-poll.
 * - **Batched acks** (`acks.ts`): outcomes are sent in batches, one call at a time; while a whole capacity of them
 *   waits for its acks (a slow server), no more jobs are leased — nor, after a lease that came back short, while any
 *   does (`#waitsForAcks`). An ack or a release that fails with no answer or a
 *   5xx (the server restarting) is made again, with backoff, for as long as a lease it carries could still hold
 *   (`retries.ts`).
 * - **Batched heartbeats** (`heartbeats.ts`): one call extends every held lease, waiting ones too. A lease found lost (the job was
 *   cancelled, or reclaimed after expiring) aborts its handler's signal, or drops the waiting job; nothing is
 *   reported for it afterwards.
 * - **No job started too late**: a held job is never started once its lease, or its deadline less a typical run of
 *   its task, is within `marginMs` — as the worker's own monotonic clock counts them from when it sent the lease
 *   request (`timing.ts`): it is released instead (`releases.ts`), at once, for another worker, no retry counted; one
 *   whose deadline would pass while it waits is released before it does (`ExpiryWatch`). The prefetch never exceeds what the slots start
 *   within half a lease or half the shortest timeout lately leased.
 * - **Stopping**: `stop()` leases nothing more (every lease in flight, a long-poll too, is let to answer, for up to
 *   `LEASE_ANSWER_WAIT_MS`: its answer may be on its way), releases at once every held job not started (and what
 *   the leases in flight still bring), lets the running ones finish for up to `shutdownGraceMs`, then aborts the
 *   signals of the ones still running and releases their jobs too, sends every outcome and resolves. `quit()` ends
 *   the grace period at once.
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
import { Releases } from "./releases.js";
import { LeaseHorizon, persist } from "./retries.js";
import { Tasks } from "./tasks.js";
import { type LeaseSource, type LoopSettings, MAX_BATCH, type Recorded } from "./ports.js";
import { ExpiryWatch, LEASES_IN_FLIGHT, MARGIN_MS, Measures, type Waiting, waiting } from "./timing.js";

export { MAX_BATCH } from "./ports.js";
export { LEASES_IN_FLIGHT } from "./timing.js";
export type { LeaseSource, LoopSettings, Recorded } from "./ports.js";

/**
 * How long a stop waits for the leases in flight: an answer may be on its way (cut then, its jobs would sit `running`
 * until their leases expire) — a long-poll's too, when work arrived for it a moment before the stop. A healthy
 * server answers a lease within a round trip and a long-poll within its wait (default 1 s); one still unanswered
 * this long after is stuck on a slow server — cut, the server hands back what it claimed for a
 * client that left before its answer — and the stop does not wait out the request's timeout.
 */
export const LEASE_ANSWER_WAIT_MS = 2000;

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
  /** Why the loop stopped on its own: the server refused the key. */
  #failure: unknown;
  /** Ends the drain's grace period now (a second signal). */
  #quit: (() => void) | undefined;
  #quitting = false;
  #stopHint = "";
  /** One per lease in flight, until it answers: aborted when the loop stops. */
  readonly #leaseCalls = new Set<AbortController>();
  /** Each lease in flight, until what it brought is taken or given back (the loop waits for them as it stops). */
  readonly #leasing = new Set<Promise<void>>();
  /** How many jobs the leases in flight asked for: places taken until they answer. */
  #asked = 0;
  /**
   * Whether a lease came back full since the last overlapping lease was sent: the backlog is deep, so the next lease
   * may overlap one in flight.
   */
  #deep = false;
  /** Whether the last lease came back short: the worker took all there was. */
  #short = false;
  /** A lease failed (not for a refused key): the loop waits before the next, longer after each failure in a row. */
  #failed = false;
  #failures = 0;
  /** Aborted `LEASE_ANSWER_WAIT_MS` after a stop: cuts the leases still unanswered (stuck on a slow server). */
  #leaseCut = new AbortController();
  #leaseCutTimer: unknown;
  #stopping = new AbortController();
  #running: Promise<void> | undefined;
  /** Wakes the lease loop: a slot freed, or the loop is stopping. Never a listener on a long-lived signal. */
  #wake: (() => void) | undefined;
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
      waitsForAcks: () => this.#waitsForAcks(),
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
    if (this.#leaseCut.signal.aborted) this.#leaseCut = new AbortController(); // after a stop
    this.#failure = undefined;
    this.#quitting = false;
    this.#deep = false;
    this.#short = false;
    this.#failed = false;
    this.#failures = 0;
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
    for (const call of this.#leaseCalls) call.abort(new ShutdownError("the worker is stopping"));
    const cut = this.#leaseCut;
    if (this.#leaseCalls.size > 0) this.#leaseCutTimer ??= this.#clock.setTimeout(
      () => cut.abort(new ShutdownError(`the worker stopped and the lease had no answer ${LEASE_ANSWER_WAIT_MS} ms later`)),
      LEASE_ANSWER_WAIT_MS,
    );
    this.#giveBack(this.#waiting.splice(0).map(({ job }) => job), "the worker is stopping");
    this.#ended();
    this.#wakeLoop();
  }

  /** The most jobs to hold: running and waiting. */
  #capacity(): number {
    return this.#settings.concurrency + this.#measures.ahead();
  }

  /**
   * How many jobs to ask for now: none until half the places are free (or 1,000, the most a lease brings), so claims
   * come in batches — or, while the backlog is deep and fewer than `LEASES_IN_FLIGHT` leases are in flight, a
   * quarter; what the leases in flight asked for counts as taken places. None either while leasing waits for acks.
   */
  #roomForLease(): number {
    const overlap = this.#deep ? LEASES_IN_FLIGHT : 1;
    const capacity = this.#capacity();
    if (this.#leaseCalls.size >= overlap || this.#waitsForAcks()) return 0;
    const held = this.activeJobs;
    const asked = this.#asked;
    const want = Math.min(capacity - held - asked, MAX_BATCH);
    // With more than 2,000 places, half of them would be more than a lease can ask for: none asked while a job is held.
    const least = Math.min(MAX_BATCH, Math.max(1, Math.floor(capacity / (2 * overlap))));
    return want >= least || (want > 0 && held === 0 && asked === 0) ? want : 0;
  }

  /**
   * Whether leasing waits for the outcomes in hand to be acked: a whole capacity of them (a slow server: more jobs
   * would only wait with them, their leases running out), or any once a lease took all there was. Work that trickles
   * in (each workflow step made ready by an advance, each job by a request) brought a lease sent beside the acks the
   * one or two jobs that came within its round trip, a claim each; waiting for the acks lets them gather, and a
   * workflow's acks are what make its next steps ready.
   */
  #waitsForAcks(): boolean {
    const { unacked } = this.#acks;
    return unacked >= this.#capacity() || (this.#short && unacked > 0);
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

  /** Sends leases while there is room (each answers on its own: `#lease`), waits after a failed one, and drains. */
  async #loop(): Promise<void> {
    const stopping = this.#stopping.signal;
    while (!stopping.aborted) {
      if (this.#failed) {
        this.#failed = false;
        await sleep(this.#clock, Math.min(500 * 2 ** this.#failures, 15_000), stopping).catch(() => undefined);
        continue;
      }
      const want = this.#roomForLease();
      if (want === 0) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        continue;
      }
      if (this.#leaseCalls.size > 0) this.#deep = false; // this lease overlaps another: each full answer allows one overlap
      this.#asked += want;
      const lease: Promise<void> = this.#lease(want).then(
        () => void this.#leasing.delete(lease),
        (error: unknown) => {
          // Only a throwing onError gets here: the loop stops, and start()'s promise rejects with it.
          this.#leasing.delete(lease);
          this.#failure ??= error;
          this.#halt();
        },
      );
      this.#leasing.add(lease);
    }
    // Every lease in flight is let to answer (or cut, `LEASE_ANSWER_WAIT_MS` after the stop): what it brings is released.
    while (this.#leasing.size > 0) await Promise.all(this.#leasing);
    await this.#drain();
  }

  /**
   * One lease, and what becomes of its answer. Its call is aborted by stop(): a long-poll whose client left claims
   * nothing more, and the server hands back (not counted as a delivery) what it claimed for it.
   */
  async #lease(want: number): Promise<void> {
    const stopping = this.#stopping.signal;
    const call = new AbortController();
    this.#leaseCalls.add(call);
    const sent = this.#clock.now();
    let jobs: LeasedJob[];
    try {
      jobs = await this.#source.lease(want, call.signal, this.#leaseCut.signal);
    } catch (error) {
      this.#deep = false;
      if (this.#refused(error) || stopping.aborted) return;
      this.#settings.onError(error);
      this.#failures += 1;
      this.#failed = true;
      this.#wakeLoop(); // to wait before the next lease
      return;
    } finally {
      this.#leaseCalls.delete(call);
      this.#asked -= want;
      if (this.#leaseCalls.size === 0) {
        this.#clock.clear(this.#leaseCutTimer);
        this.#leaseCutTimer = undefined;
      }
    }
    this.#failures = 0;
    const answered = this.#clock.now();
    if (jobs.length > 0) this.#horizon.answered(answered);
    this.#deep = jobs.length === want;
    this.#short = !this.#deep;
    this.#measures.leaseAnswered(answered - sent, jobs, this.#deep);
    if (stopping.aborted) {
      this.#giveBack(jobs, "the worker is stopping"); // claimed as the worker stopped: another worker runs them
      return;
    }
    const { leaseMs, heartbeatMs } = this.#settings;
    // The answer took long (a long-poll): extend these leases now, not a heartbeat period on.
    if (jobs.length > 0 && answered - sent > leaseMs - heartbeatMs - this.#measures.marginMs) void this.#heartbeats.beat();
    const taken = jobs.map((job) => waiting(job, sent, leaseMs));
    for (const entry of taken) this.#take(entry);
    this.#ended(); // starts what it can, and wakes the loop if there is room for another lease
    this.#expiry.taken(taken);
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

  #take(entry: Waiting): void {
    const { job } = entry;
    const earlier = this.#leases.get(job.id);
    // Delivered again while an earlier delivery is still here (its lease expired while it waited or ran, and the
    // janitor handed the job out anew): that lease is lost, so its delivery is dropped.
    if (earlier !== undefined && earlier !== job.lease_token) this.#lost(job.id, earlier);
    this.#leases.set(job.id, job.lease_token);
    this.#waiting.push(entry);
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
    this.#offerRoom();
  }

  /** An ack answered (or was given up on): its jobs are no longer held, and a lease may have room again. */
  #acked(batch: Recorded[]): void {
    for (const { id, lease_token } of batch) {
      if (this.#leases.get(id) === lease_token) this.#leases.delete(id);
    }
    this.#offerRoom();
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
