/**
 * Persisting with an outcome or a release while the server is away (restarting, its database blipping): an ack or a
 * release whose call fails with no answer (a `ConnectionError`) or a 5xx is made again, with backoff on the loop's
 * clock, for as long as a lease it carries could still hold. Given up sooner, the outcome would be lost while the
 * lease still held, the job would come back when the lease expired, and a handler that had finished would run
 * again; kept up longer, it could only be answered `lease_lost`. A `lease_lost` answer is an answer, and final.
 *
 * How long a lease can hold, on the worker's clock: the server starts or extends a lease no later than its answer
 * arrives, so none of the leases a loop holds lasts past the last answer of a lease or a heartbeat that held, plus
 * the lease's length (`LeaseHorizon`). While the server is away no answer comes, and that moment does not move.
 */

import { APIError, ConnectionError } from "../errors.js";
import { type Clock, sleep } from "./clock.js";

/** The pause before the first repeat, doubled after each (with jitter): a server that restarts is back in a second or two. */
export const FIRST_PAUSE_MS = 50;
export const LONGEST_PAUSE_MS = 1000;

/** Whether a call that failed with `error` may succeed if made again: it got no answer, or a 5xx. */
export function isTransient(error: unknown): boolean {
  return error instanceof ConnectionError || (error instanceof APIError && error.status >= 500);
}

/** The latest moment, on the loop's clock, that a lease the loop holds could still hold. */
export class LeaseHorizon {
  until = -Infinity;

  constructor(readonly leaseMs: number) {}

  /** The server started or extended a lease, at the latest at `at` (when its answer arrived). */
  answered(at: number): void {
    this.until = Math.max(this.until, at + this.leaseMs);
  }
}

/**
 * `call()`'s answer, made again after each transient failure until `horizon` has passed (read anew each time: a
 * heartbeat that gets through meanwhile moves it) or `abandon` aborts (a quit); then the last error is thrown.
 */
export async function persist<T>(call: () => Promise<T>, clock: Clock, horizon: LeaseHorizon, abandon: AbortSignal): Promise<T> {
  let pause = FIRST_PAUSE_MS;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      const left = horizon.until - clock.now();
      if (!isTransient(error) || left <= 0 || abandon.aborted) throw error;
      // Jitter: workers that lost one server together do not come back to it in step.
      const wait = Math.min(pause / 2 + Math.random() * (pause / 2), left);
      await sleep(clock, wait, abandon).catch(() => {
        throw error; // a quit: what could not be sent is left to the leases' expiry
      });
    }
    pause = Math.min(2 * pause, LONGEST_PAUSE_MS);
  }
}
