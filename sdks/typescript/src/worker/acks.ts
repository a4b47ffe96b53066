/**
 * `Acks`: the loop's batched acks. An outcome is recorded when its handler ends (its slot is free at once) and sent in
 * batches, when `ackBatch` are ready or `ackIntervalMs` after the first, one call at a time — or at once when no more
 * can join the batch soon (no job is held any more, or leasing waits for these acks: a whole capacity of outcomes
 * waits for them — a slow server — or any does after a lease that came back short). A job
 * whose outcome was still waiting in a batch when the process died is delivered again once its lease expires
 * (at-least-once). An ack that fails with no answer or a 5xx (the server restarting) is made again, with backoff, for
 * as long as a lease it carries could still hold (`retries.ts`); later outcomes wait behind it.
 */

import type { Clock } from "./clock.js";
import { type LeaseSource, type LoopSettings, MAX_BATCH, type Recorded } from "./ports.js";

/** How many of the latest ack sizes `batches` keeps (at least; up to twice as many between trims). */
const ACK_BATCHES_KEPT = 1000;

/** What the acks need of their loop. */
export interface AckHost {
  /** How many jobs the loop holds: running, or waiting for a slot. */
  activeJobs(): number;
  /** Whether leasing waits for the outcomes in hand to be acked (then none waits for a batch to fill). */
  waitsForAcks(): boolean;
  /** Whether an error is the server refusing the key (the loop then stops, and says so once). */
  refused(error: unknown): boolean;
  /** Makes a call again while the server is away and the leases may hold (`retries.ts`). */
  persist(call: () => Promise<void>): Promise<void>;
  /** A batch was answered, or given up on: its jobs are no longer held (and leasing may have room again). */
  acked(batch: Recorded[]): void;
}

export class Acks {
  /** The sizes of the last `ACK_BATCHES_KEPT` acks sent, oldest first (for tests and metrics). */
  readonly batches: number[] = [];
  /** Outcomes recorded whose ack has not answered yet: queued, or being sent. */
  unacked = 0;
  #outcomes: Recorded[] = [];
  #acking: Promise<void> | undefined;
  #timer: unknown;

  constructor(
    readonly source: LeaseSource,
    readonly settings: LoopSettings,
    readonly clock: Clock,
    readonly host: AckHost,
  ) {}

  record(recorded: Recorded): void {
    this.#outcomes.push(recorded);
    this.unacked += 1;
    // At once, too, when no more outcomes can join the batch soon: none is held (more come only with a lease), or
    // leasing waits for these acks — a capacity below ackBatch (few slots, slow tasks) stalled every capacity of
    // jobs for ackIntervalMs.
    const { host } = this;
    const now = this.#outcomes.length >= this.settings.ackBatch || host.activeJobs() === 0 || host.waitsForAcks();
    if (now) void this.flush();
    else this.#timer ??= this.clock.setTimeout(() => void this.flush(), this.settings.ackIntervalMs);
  }

  /** Send the outcomes that are ready, one call at a time; what comes meanwhile goes in the next. */
  flush(): Promise<void> {
    this.clock.clear(this.#timer);
    this.#timer = undefined;
    // Only with something to send: a chain started on nothing would end before it is stored here, and the
    // settled promise stored after its end would then pass for a chain in flight forever — no outcome sent
    // again while the jobs stay held, heartbeated for ever.
    if (this.#acking === undefined && this.#outcomes.length > 0) this.#acking = this.#send();
    return this.#acking ?? Promise.resolve();
  }

  async #send(): Promise<void> {
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
    this.batches.push(batch.length);
    // Bounded, so a worker that runs for days does not grow by a number per ack (trimmed in bulk: amortised O(1)).
    if (this.batches.length >= 2 * ACK_BATCHES_KEPT) this.batches.splice(0, ACK_BATCHES_KEPT);
    try {
      // Made again while the server is away, as long as a lease of the batch may hold; later outcomes wait behind it.
      await this.host.persist(() => this.source.ack(batch));
    } catch (error) {
      // Left to the leases' expiry: the jobs are delivered again.
      if (!this.host.refused(error)) this.settings.onError(error);
    } finally {
      this.unacked -= batch.length;
      this.host.acked(batch);
    }
  }
}
