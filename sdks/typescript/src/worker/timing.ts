/**
 * What the worker loop decides from time: how long its leases and deadlines last as its own clock counts them,
 * whether a held job can still be started, and how many jobs to hold.
 *
 * A worker never asks the server what time it is. A lease cannot have begun before the worker *sent* the lease
 * request, so on its own monotonic clock a job's lease lasts at least until `sent + leaseMs` and its deadline comes
 * no sooner than `sent + timeout_seconds` (the server counts both from the claim, later); a heartbeat that held
 * extends a lease to at least its own sending plus `leaseMs`. `marginMs` covers the round trip that records an
 * outcome.
 */

import type { LeasedJob } from "../types.js";
import type { Clock } from "./clock.js";

/** The default margin: a job is not started with less than this left of its lease or before its deadline. */
export const MARGIN_MS = 1000;
/**
 * The most jobs leased ahead by default. Every job of a lease answer is parsed at once and stays alive until it
 * has run, so the bigger the batch, the more V8 copies at each young-generation collection — and past a total it
 * doubles the young generation for good (+25 MB RSS). With 1,000 ahead (answers of ~500 jobs) it did so during a
 * 200,000-job no-op drain (peak RSS 113–117 MB); with 700 it did not (86–89 MB), for 1–8% fewer no-op jobs a
 * second (alternating drains, 2026-12-02). With two leases overlapping (`LEASES_IN_FLIGHT`), 700 ahead doubled it
 * in some 20,000-job drains too (peak RSS 85–105 MB); 500 did not (70–71 MB), at the same rate within the noise
 * (five alternating pairs, 2026-12-06). Any long enough busy run may still reach V8's default maximum.
 */
export const MAX_AHEAD = 500;
/**
 * How many leases overlap while the backlog is deep (`WorkerLoop`): one claim's round trip, then one ack's, in turn
 * left the server and PostgreSQL idle part of the time (one worker drained ~19–20k no-op jobs a second with 1.35 of
 * the machine's 2 cores busy).
 */
export const LEASES_IN_FLIGHT = 2;
/** The weight of the newest sample in the running averages of task durations and lease round trips. */
const SMOOTHING = 0.2;

/** A job held and not started yet, with its bounds on the worker's clock (ms). */
export interface Waiting {
  job: LeasedJob;
  leaseUntil: number;
  deadlineUntil: number | undefined;
}

/** A job of the answer to a lease request sent at `sent` (the server caps a lease at the deadline). */
export function waiting(job: LeasedJob, sent: number, leaseMs: number): Waiting {
  // A long-poll's claim came later than its sending by as much as the server says it waited: counted from the
  // sending alone, a poll that waited longer than a job's timeout would have every job look past its deadline.
  sent += (job.claimed_after_seconds ?? 0) * 1000;
  const deadlineUntil = job.timeout_seconds == null ? undefined : sent + job.timeout_seconds * 1000;
  return { job, leaseUntil: Math.min(sent + leaseMs, deadlineUntil ?? Infinity), deadlineUntil };
}

/** A heartbeat sent at `sent` held the lease of `held`. */
export function extend(held: Waiting, sent: number, leaseMs: number): void {
  held.leaseUntil = Math.min(sent + leaseMs, held.deadlineUntil ?? Infinity);
}

/** What the loop measures — tasks' durations (per task, and over all), leases' round trips, the shortest timeout lately leased — and what follows from it. */
export class Measures {
  taskMs: number | undefined;
  roundTripMs: number | undefined;
  /** The shortest `timeout_seconds` (in ms) among the jobs of the latest lease answer that had any. */
  shortestTimeoutMs: number | undefined;
  readonly #typical = new Map<string, number>();

  constructor(
    readonly concurrency: number,
    readonly prefetch: number | undefined,
    readonly leaseMs: number,
    readonly marginMs: number,
  ) {}

  taskRan(taskName: string, ms: number): void {
    this.taskMs = average(this.taskMs, ms);
    this.#typical.set(taskName, average(this.#typical.get(taskName), ms));
  }

  leaseAnswered(ms: number, jobs: LeasedJob[], full: boolean): void {
    if (full) this.roundTripMs = average(this.roundTripMs, Math.min(ms, 1000)); // a full answer did not wait for work
    let shortest: number | undefined;
    for (const job of jobs) {
      if (job.timeout_seconds != null) shortest = Math.min(shortest ?? Infinity, job.timeout_seconds * 1000);
    }
    if (shortest !== undefined) this.shortestTimeoutMs = shortest;
  }

  /**
   * How many jobs to hold beyond the running ones: by default as many as the slots get through in two lease round
   * trips (as many as the slots before anything is measured), or `prefetch`; and never more than the slots start
   * within half a lease or half the shortest timeout, so a job held is started well within both.
   */
  ahead(): number {
    const { concurrency, prefetch, taskMs, roundTripMs } = this;
    if (taskMs === undefined) return prefetch ?? concurrency;
    const perMs = concurrency / Math.max(taskMs, 0.001);
    let ahead = prefetch ?? (roundTripMs === undefined ? concurrency : Math.min(MAX_AHEAD, Math.floor(2 * perMs * roundTripMs) + 1));
    const horizon = Math.min(this.leaseMs, this.shortestTimeoutMs ?? Infinity);
    ahead = Math.min(ahead, Math.floor((perMs * horizon) / 2));
    return ahead;
  }

  /**
   * The last moment `held` may start: before its lease runs out, less the margin; and, with a deadline, early
   * enough to end a typical run of its task before it — unless even a fresh delivery could not (a typical run is
   * longer than the timeout), which then only has to start before the deadline.
   */
  latestStart(held: Waiting): number {
    let latest = held.leaseUntil - this.marginMs;
    if (held.deadlineUntil !== undefined) {
      let need = this.#typical.get(held.job.task_name) ?? 0;
      if (need + this.marginMs >= (held.job.timeout_seconds ?? 0) * 1000) need = 0;
      latest = Math.min(latest, held.deadlineUntil - this.marginMs - need);
    }
    return latest;
  }
}

/**
 * The expiry watch: a timer at the first moment a waiting job must be released rather than started
 * (`Measures.latestStart`), so that a job whose deadline would pass while it waits goes back before it does.
 */
export class ExpiryWatch {
  #timer: unknown;
  #due = Infinity;

  constructor(
    readonly clock: Clock,
    readonly measures: Measures,
    /** The jobs waiting for a slot. */
    readonly waiting: () => Waiting[],
    /** Release these waiting jobs: they can no longer start. */
    readonly expire: (stale: Set<Waiting>) => void,
  ) {}

  /** Arm the watch for the soonest of `entries` (jobs just taken; all waiting ones when it fired), if sooner. */
  taken(entries: Waiting[]): void {
    let due = Infinity;
    for (const entry of entries) due = Math.min(due, this.measures.latestStart(entry));
    if (due >= this.#due) return;
    this.clock.clear(this.#timer);
    this.#due = due;
    this.#timer = due === Infinity ? undefined : this.clock.setTimeout(() => this.#fire(), Math.max(due - this.clock.now(), 0));
  }

  /** The loop drains: nothing waits any more, and a run started after it arms the watch afresh. */
  stop(): void {
    this.clock.clear(this.#timer);
    this.#timer = undefined;
    this.#due = Infinity;
  }

  /** Release every waiting job past the last moment it could start; watch for the next. */
  #fire(): void {
    this.clock.clear(this.#timer);
    this.#timer = undefined;
    this.#due = Infinity;
    const now = this.clock.now();
    const stale = new Set(this.waiting().filter((entry) => this.measures.latestStart(entry) <= now));
    if (stale.size > 0) this.expire(stale);
    this.taken(this.waiting());
  }
}

function average(current: number | undefined, sample: number): number {
  return current === undefined ? sample : current + SMOOTHING * (sample - current);
}
