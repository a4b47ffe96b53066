/**
 * `Leasing`: how many jobs a `WorkerLoop` holds (the prefetch) and when it asks for more.
 *
 * At most `concurrency` handlers run at once, and more jobs are leased ahead and wait their turn, so a free slot never
 * waits for a round trip: by default as many as the slots get through in two lease round trips (`Measures.ahead`), at
 * most 500 — short tasks are claimed by the hundred, long ones hardly ahead at all. A lease asks for many jobs at
 * once, and only once half the places are free (or 1,000, the most one lease brings). While the backlog is deep (the
 * last lease came back full), `LEASES_IN_FLIGHT` (2) leases are in flight at once, each asked once a quarter of the
 * places are free: one claim's round trip, then one ack's, in turn no longer leave the server and PostgreSQL idle part
 * of the time. Each full answer allows one overlap; when a lease comes back short (or fails), one lease at a time
 * again, so an idle worker parks one long-poll. While a whole capacity of outcomes waits for its acks (a slow server),
 * no more jobs are leased — nor, after a lease that came back short, while any does (`waitsForAcks`).
 *
 * What a lease brings the loop takes (`LeasingHost.take`); what arrives as the loop stops is given back at once.
 */

import type { LeasedJob } from "../types.js";
import { type Clock, sleep } from "./clock.js";
import { ShutdownError } from "./context.js";
import { type LeaseSource, type LoopSettings, MAX_BATCH } from "./ports.js";
import type { LeaseHorizon } from "./retries.js";
import { LEASES_IN_FLIGHT, type Measures, type Waiting, waiting } from "./timing.js";

/**
 * How long a stop waits for the leases in flight: an answer may be on its way (cut then, its jobs would sit `running`
 * until their leases expire) — a long-poll's too, when work arrived for it a moment before the stop. A healthy
 * server answers a lease within a round trip and a long-poll within its wait (default 1 s); one still unanswered
 * this long after is stuck on a slow server — cut, the server hands back what it claimed for a
 * client that left before its answer — and the stop does not wait out the request's timeout.
 */
export const LEASE_ANSWER_WAIT_MS = 2000;

/** What the leasing needs of its loop. */
export interface LeasingHost {
  /** How many jobs the loop holds: running, or waiting for a slot. */
  activeJobs(): number;
  /** Outcomes recorded whose ack has not answered yet. */
  unacked(): number;
  /** Whether an error is the server refusing the key (the loop then stops, and says so once). */
  refused(error: unknown): boolean;
  /** Extend every lease held now (an answer took long: a long-poll's). */
  beat(): void;
  /** Jobs a lease brought: hold them, start what the free slots can, watch for the moment they must go back. */
  take(entries: Waiting[]): void;
  /** Give jobs back to the queue: they are no longer held. */
  giveBack(jobs: LeasedJob[], why: string): void;
  /** A lease's failure could not be handled (`onError` threw): the loop stops, and `start()`'s promise rejects with it. */
  failed(error: unknown): void;
}

export class Leasing {
  /** One per lease in flight, until it answers: aborted when the loop stops. */
  readonly #calls = new Set<AbortController>();
  /** Each lease in flight, until what it brought is taken or given back (the loop waits for them as it stops). */
  readonly #inFlight = new Set<Promise<void>>();
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
  #cut = new AbortController();
  #cutTimer: unknown;
  /** Wakes the lease loop: a slot freed, or the loop is stopping. Never a listener on a long-lived signal. */
  #wake: (() => void) | undefined;

  constructor(
    readonly source: LeaseSource,
    readonly settings: LoopSettings,
    readonly clock: Clock,
    /** Told each time a lease brought jobs. */
    readonly horizon: LeaseHorizon,
    readonly measures: Measures,
    readonly host: LeasingHost,
  ) {}

  /** A (re)started loop begins from no answer yet. */
  reset(): void {
    if (this.#cut.signal.aborted) this.#cut = new AbortController(); // after a stop
    this.#deep = false;
    this.#short = false;
    this.#failed = false;
    this.#failures = 0;
  }

  /** The most jobs to hold: running and waiting. */
  capacity(): number {
    return this.settings.concurrency + this.measures.ahead();
  }

  /**
   * Whether leasing waits for the outcomes in hand to be acked: a whole capacity of them (a slow server: more jobs
   * would only wait with them, their leases running out), or any once a lease took all there was. Work that trickles
   * in (each workflow step made ready by an advance, each job by a request) brought a lease sent beside the acks the
   * one or two jobs that came within its round trip, a claim each; waiting for the acks lets them gather, and a
   * workflow's acks are what make its next steps ready.
   */
  waitsForAcks(): boolean {
    const unacked = this.host.unacked();
    return unacked >= this.capacity() || (this.#short && unacked > 0);
  }

  /**
   * How many jobs to ask for now: none until half the places are free (or 1,000, the most a lease brings), so claims
   * come in batches — or, while the backlog is deep and fewer than `LEASES_IN_FLIGHT` leases are in flight, a
   * quarter; what the leases in flight asked for counts as taken places. None either while leasing waits for acks.
   */
  #want(): number {
    const overlap = this.#deep ? LEASES_IN_FLIGHT : 1;
    const capacity = this.capacity();
    if (this.#calls.size >= overlap || this.waitsForAcks()) return 0;
    const held = this.host.activeJobs();
    const asked = this.#asked;
    const want = Math.min(capacity - held - asked, MAX_BATCH);
    // With more than 2,000 places, half of them would be more than a lease can ask for: none asked while a job is held.
    const least = Math.min(MAX_BATCH, Math.max(1, Math.floor(capacity / (2 * overlap))));
    return want >= least || (want > 0 && held === 0 && asked === 0) ? want : 0;
  }

  /** Wake the lease loop if it waits and there is room for a lease now (a slot or an ack came free). */
  offer(): void {
    if (this.#wake && this.#want() > 0) this.wake();
  }

  /** Wake the lease loop whatever the room (the loop is stopping, or a lease failed). */
  wake(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /**
   * The loop stops: every lease call in flight is told (a parked long-poll ends, one whose answer may be on its way is
   * let to arrive for up to `LEASE_ANSWER_WAIT_MS`).
   */
  halt(): void {
    for (const call of this.#calls) call.abort(new ShutdownError("the worker is stopping"));
    const cut = this.#cut;
    if (this.#calls.size > 0) this.#cutTimer ??= this.clock.setTimeout(
      () => cut.abort(new ShutdownError(`the worker stopped and the lease had no answer ${LEASE_ANSWER_WAIT_MS} ms later`)),
      LEASE_ANSWER_WAIT_MS,
    );
  }

  /**
   * Sends leases while there is room (each answers on its own: `#lease`) and waits after a failed one, until `stopping`
   * aborts; then every lease in flight is let to answer (or cut, `LEASE_ANSWER_WAIT_MS` after the stop), and what it
   * brings is released.
   */
  async run(stopping: AbortSignal): Promise<void> {
    while (!stopping.aborted) {
      if (this.#failed) {
        this.#failed = false;
        await sleep(this.clock, Math.min(500 * 2 ** this.#failures, 15_000), stopping).catch(() => undefined);
        continue;
      }
      const want = this.#want();
      if (want === 0) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        continue;
      }
      if (this.#calls.size > 0) this.#deep = false; // this lease overlaps another: each full answer allows one overlap
      this.#asked += want;
      const lease: Promise<void> = this.#lease(want, stopping).then(
        () => void this.#inFlight.delete(lease),
        (error: unknown) => {
          // Only a throwing onError gets here.
          this.#inFlight.delete(lease);
          this.host.failed(error);
        },
      );
      this.#inFlight.add(lease);
    }
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight);
  }

  /**
   * One lease, and what becomes of its answer. Its call is aborted by stop(): a long-poll whose client left claims
   * nothing more, and the server hands back (not counted as a delivery) what it claimed for it.
   */
  async #lease(want: number, stopping: AbortSignal): Promise<void> {
    const call = new AbortController();
    this.#calls.add(call);
    const sent = this.clock.now();
    let jobs: LeasedJob[];
    try {
      jobs = await this.source.lease(want, call.signal, this.#cut.signal);
    } catch (error) {
      this.#deep = false;
      if (this.host.refused(error) || stopping.aborted) return;
      this.settings.onError(error);
      this.#failures += 1;
      this.#failed = true;
      this.wake(); // to wait before the next lease
      return;
    } finally {
      this.#calls.delete(call);
      this.#asked -= want;
      if (this.#calls.size === 0) {
        this.clock.clear(this.#cutTimer);
        this.#cutTimer = undefined;
      }
    }
    this.#failures = 0;
    const answered = this.clock.now();
    if (jobs.length > 0) this.horizon.answered(answered);
    this.#deep = jobs.length === want;
    this.#short = !this.#deep;
    this.measures.leaseAnswered(answered - sent, jobs, this.#deep);
    if (stopping.aborted) {
      this.host.giveBack(jobs, "the worker is stopping"); // claimed as the worker stopped: another worker runs them
      return;
    }
    const { leaseMs, heartbeatMs } = this.settings;
    // The answer took long (a long-poll): extend these leases now, not a heartbeat period on.
    if (jobs.length > 0 && answered - sent > leaseMs - heartbeatMs - this.measures.marginMs) this.host.beat();
    this.host.take(jobs.map((job) => waiting(job, sent, leaseMs)));
  }
}
