/**
 * `Heartbeats`: the loop's batched heartbeats. One call (per `MAX_BATCH`) extends every lease held, waiting jobs'
 * too: a waiting job's lease that held now lasts, on the loop's clock, until the heartbeat's sending plus `leaseMs`
 * (never past its deadline). A lease found lost (the job was cancelled, or reclaimed after expiring) is the loop's to
 * drop: it aborts the handler's signal, or drops the waiting job. A heartbeat that finds the server away is not made
 * again: the next one, a period on, extends the same leases. A running handler's own `ctx.progress()` is one job's
 * heartbeat, now, and its `ctx.addSteps()` is made under the same lease (`JobLease`): a lease either finds lost is
 * lost for the job too.
 */

import { LeaseLostError, NotFoundError } from "../errors.js";
import type { NewStep } from "../steps.js";
import type { WorkflowStep } from "../types.js";
import type { Clock } from "./clock.js";
import type { HeldJob, JobLease } from "./context.js";
import { type LeaseSource, type LoopSettings, MAX_BATCH } from "./ports.js";
import type { LeaseHorizon } from "./retries.js";
import { type Waiting, extend } from "./timing.js";

/** What the heartbeats need of their loop. */
export interface HeartbeatHost {
  /** Every lease held, `[job id, lease token]` pairs: running jobs and waiting ones. */
  leases(): [string, string][];
  /** The jobs waiting for a slot. */
  waiting(): Waiting[];
  /** Whether an error is the server refusing the key (the loop then stops, and says so once). */
  refused(error: unknown): boolean;
  /** The lease of this delivery no longer holds. */
  lost(id: string, token: string): void;
}

export class Heartbeats implements JobLease {
  #beating = false;

  constructor(
    readonly source: LeaseSource,
    readonly settings: LoopSettings,
    readonly clock: Clock,
    /** Told each time a lease was found to hold. */
    readonly horizon: LeaseHorizon,
    readonly host: HeartbeatHost,
  ) {}

  /** One call extends every lease held; a lost one tells the loop. At most one beat at a time. */
  async beat(): Promise<void> {
    if (this.#beating) return;
    const held = this.host.leases();
    if (held.length === 0) return;
    this.#beating = true;
    try {
      const waiting = new Map(this.host.waiting().map((entry) => [entry.job.lease_token, entry]));
      for (let start = 0; start < held.length; start += MAX_BATCH) {
        const chunk = held.slice(start, start + MAX_BATCH);
        const sent = this.clock.now();
        let alive: boolean[];
        try {
          alive = await this.source.heartbeat(chunk);
        } catch (error) {
          // Unreachable for now: the leases may still hold; try again next time.
          if (!this.host.refused(error)) this.settings.onError(error);
          continue;
        }
        if (alive.some((holds) => holds)) this.horizon.answered(this.clock.now());
        for (const [index, holds] of alive.entries()) {
          const [id, token] = chunk[index] ?? [];
          if (!holds && id !== undefined && token !== undefined) this.host.lost(id, token);
          const entry = holds && token !== undefined ? waiting.get(token) : undefined;
          if (entry) extend(entry, sent, this.settings.leaseMs);
        }
      }
    } finally {
      this.#beating = false;
    }
  }

  /** A lease found lost here is lost for the job too: its signal aborts, as when a heartbeat finds it. */
  async addSteps(held: HeldJob, steps: NewStep[]): Promise<WorkflowStep[]> {
    if (held.lost) throw new LeaseLostError(409, "lease_lost", `job ${held.job.id}: the lease was lost (cancelled or reclaimed)`);
    try {
      return await this.source.addSteps(held.job, steps);
    } catch (error) {
      if (error instanceof LeaseLostError) {
        held.lost = true;
        held.abort(error);
      }
      throw error;
    }
  }

  async progress(held: HeldJob, value: unknown): Promise<boolean> {
    if (held.lost) return false;
    try {
      await this.source.progress(held.job, value);
      this.horizon.answered(this.clock.now());
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
}
