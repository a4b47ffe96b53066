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

/** What the worker writes its lines to; `console` is one. */
export interface WorkerLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** The worker's line for a job that ended: failures always (with their stack), the rest with `logJobs`. */
export function report(to: { logger: WorkerLogger; logJobs: boolean }, job: LeasedJob, outcome: Outcome, ms: number): void {
  const { logger, logJobs } = to;
  if (!("error" in outcome)) {
    if (logJobs) logger.info(`${jobLine(job)}: completed in ${seconds(ms)}`);
    return;
  }
  if (outcome.requested) {
    if (logJobs) logger.info(`${jobLine(job)}: asked to retry in ${outcome.retryAfterSeconds} s after ${seconds(ms)}: ${summary(outcome.error)}`);
    return;
  }
  if (outcome.said) {
    if (logJobs) logger.info(`${jobLine(job)}: no handler, dead-lettered`);
    return;
  }
  const then = !outcome.retryable
    ? "dead-lettered"
    : job.retry_count >= job.max_retries
      ? "dead-lettered: no retries left"
      : `retry ${job.retry_count + 1} of ${job.max_retries} follows`;
  logger.warn(`${jobLine(job)}: failed after ${seconds(ms)} (${then}): ${outcome.error}`);
}

function summary(error: string): string {
  const end = error.indexOf("\n");
  return end === -1 ? error : error.slice(0, end);
}

function jobLine(job: LeasedJob): string {
  return `${job.task_name} job ${job.id} (delivery ${job.delivery_count})`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(3)} s`;
}

export const SHUT_DOWN: Outcome = { error: "the worker stopped before the job finished", retryable: true, retryAfterSeconds: 0 };
