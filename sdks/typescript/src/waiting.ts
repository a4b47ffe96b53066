/**
 * `jobs.wait`, `jobs.run` and `workflows.wait`: long-polling `GET …?wait_seconds=` until the object finishes.
 * The server answers as soon as it does (README.md, "A job's life with curl"), so nothing here polls on a timer:
 * each request waits server-side up to 60 s, and a longer `timeoutMs` (or none) is spent in as many requests.
 */

import { WaitTimeoutError } from "./errors.js";

export interface WaitOptions {
  /** The longest to wait in all (default: no limit); then the promise rejects with a `WaitTimeoutError`. */
  timeoutMs?: number | undefined;
  /** Aborts the wait; the promise rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

const MAX_WAIT_SECONDS = 60;
/** A request's own timeout is its server-side wait plus this much. */
const ANSWER_MARGIN_MS = 10_000;

export const FINISHED_JOB: ReadonlySet<string> = new Set(["completed", "dead_letter", "cancelled"]);

export async function waitUntil<T>(
  fetch: (waitSeconds: number, requestTimeoutMs: number, signal: AbortSignal | undefined) => Promise<T>,
  done: (value: T) => boolean,
  options: WaitOptions,
  what: string,
): Promise<T> {
  const { timeoutMs, signal } = options;
  if (timeoutMs !== undefined && !(timeoutMs >= 0)) throw new RangeError("timeoutMs must be a number ≥ 0");
  const end = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
  for (;;) {
    const remainingMs = end === undefined ? MAX_WAIT_SECONDS * 1000 : Math.max(0, end - Date.now());
    const waitSeconds = Math.min(MAX_WAIT_SECONDS, remainingMs / 1000);
    const current = await fetch(waitSeconds, waitSeconds * 1000 + ANSWER_MARGIN_MS, signal);
    if (done(current)) return current;
    if (end !== undefined && Date.now() >= end) throw new WaitTimeoutError(`${what} has not finished after ${timeoutMs} ms`);
  }
}
