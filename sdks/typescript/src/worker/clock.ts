/**
 * The time the worker loop reads and the timers it sets, passed in: the system's in a worker, a scripted one in
 * the loop's tests, which then advance time instead of waiting for it.
 */

import { performance } from "node:perf_hooks";

/** A timer of the clock that set it: only that clock's `clear` takes it. */
export type Timer = unknown;

export interface Clock {
  /** Milliseconds on a monotonic clock, for durations (task runs, lease round trips). */
  now(): number;
  /** Milliseconds since the epoch, for a job's `deadline` (a time of day set by the server). */
  wall(): number;
  setTimeout(callback: () => void, ms: number): Timer;
  setInterval(callback: () => void, ms: number): Timer;
  /** Clear a timeout or an interval (or nothing: undefined). */
  clear(timer: Timer): void;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  wall: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  setInterval: (callback, ms) => setInterval(callback, ms),
  clear: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout> | undefined),
};

/** Resolves after `ms` of `clock`'s time, or rejects with the signal's reason as soon as it aborts. */
export function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clock.clear(timer);
      reject(signal.reason);
    };
    const timer = clock.setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
