/**
 * `Releases`: jobs the loop holds and will not run — not started when it stops, too close to their lease's end or
 * deadline to start, or aborted at the grace period's end — go back to the queue at once (`LeaseSource.release`),
 * claimable by another worker, no retry counted. In the background, in calls of up to `MAX_BATCH`; the drain waits
 * for them. A release that fails while the server is away is made again as long as the leases may hold
 * (`retries.ts`); one that still fails leaves the jobs to their leases' expiry.
 */

import type { LeasedJob } from "../types.js";
import { type LeaseSource, type LoopSettings, MAX_BATCH } from "./ports.js";

export class Releases {
  /** Jobs handed back so far. */
  count = 0;
  readonly #inFlight = new Set<Promise<void>>();

  constructor(
    readonly source: LeaseSource,
    readonly settings: LoopSettings,
    /** Whether an error is the server refusing the key (the loop then stops, and says so once). */
    readonly refused: (error: unknown) => boolean,
    /** Makes a call again while the server is away and the leases may hold (`retries.ts`). */
    readonly persist: (call: () => Promise<boolean[]>) => Promise<boolean[]>,
  ) {}

  /** Release `jobs` (the caller no longer holds or heartbeats them). */
  giveBack(jobs: LeasedJob[], why: string): void {
    if (jobs.length === 0) return;
    this.count += jobs.length;
    const { logger, workerId, onError } = this.settings;
    logger.info(`worker ${workerId}: releasing ${jobs.length} jobs (${why})`);
    const leases = jobs.map(({ id, lease_token }): [string, string] => [id, lease_token]);
    const release = (async () => {
      for (let start = 0; start < leases.length; start += MAX_BATCH) {
        try {
          const chunk = leases.slice(start, start + MAX_BATCH);
          await this.persist(() => this.source.release(chunk));
        } catch (error) {
          // Left to their leases' expiry: the janitor reclaims them, counting a failed delivery.
          if (!this.refused(error)) onError(error);
        }
      }
    })();
    this.#inFlight.add(release);
    void release.finally(() => this.#inFlight.delete(release));
  }

  /** Resolves once every release given so far has answered. */
  async settled(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
  }
}
