/**
 * How a handler's run ended, as the worker records and reports it: the outcome, and the text a failure stores as
 * its `error_message` (the one-line summary first, then the stack, at most 64 KiB).
 */

import type { LeasedJob } from "./types.js";

const MAX_ERROR_CHARS = 65_536;

/** Throw from a handler to retry the job after `afterSeconds` instead of its backoff. */
export class RetryError extends Error {
  override name = "RetryError";
  constructor(
    readonly afterSeconds: number,
    message = `retry in ${afterSeconds} s`,
  ) {
    super(message);
  }
}

/** Throw from a handler to dead-letter the job at once, whatever retries it has left. */
export class FatalError extends Error {
  override name = "FatalError";
}

export type Outcome =
  | { result: unknown }
  | {
      error: string;
      retryable: boolean;
      retryAfterSeconds?: number;
      /** The handler asked for it (RetryError): not a failure to warn about. */
      requested?: boolean;
      /** Already logged (an unknown task): the per-job line is an info one. */
      said?: boolean;
    };

export function failure(error: unknown): Outcome {
  if (error instanceof RetryError) {
    return { error: bounded(errorSummary(error)), retryable: true, retryAfterSeconds: error.afterSeconds, requested: true };
  }
  return { error: errorText(error), retryable: !(error instanceof FatalError) };
}

function errorSummary(error: unknown): string {
  return error instanceof Error ? (error.name === "Error" ? error.message : `${error.name}: ${error.message}`) : String(error);
}

/** What a failure stores: its one-line summary (what lists show), then the stack; bounded, keeping the stack's start. */
function errorText(error: unknown): string {
  const head = errorSummary(error);
  const stack = error instanceof Error && typeof error.stack === "string" ? error.stack : "";
  return bounded(stack ? `${head}\n\n${stack}` : head);
}

/** Fit to be stored: PostgreSQL text holds no NUL, and the server caps the message's length. */
function bounded(text: string): string {
  const clean = text.replaceAll("\u0000", "");
  if (clean.length <= MAX_ERROR_CHARS) return clean || "the task failed";
  const cut = "\n[… stack cut …]";
  return clean.slice(0, MAX_ERROR_CHARS - cut.length) + cut;
}

export function summary(error: string): string {
  const end = error.indexOf("\n");
  return end === -1 ? error : error.slice(0, end);
}

export function jobLine(job: LeasedJob): string {
  return `${job.task_name} job ${job.id} (delivery ${job.delivery_count})`;
}

export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(3)} s`;
}

export const SHUT_DOWN: Outcome = { error: "the worker stopped before the job finished", retryable: true, retryAfterSeconds: 0 };
