/** What the worker loop is plugged into: a `LeaseSource` (the worker routes over HTTP; a test's script), and its settings. */

import type { Outcome, WorkerLogger } from "../outcomes.js";
import type { NewStep } from "../steps.js";
import type { LeasedJob, WorkflowStep } from "../types.js";

/** Where a `WorkerLoop` gets jobs and records what became of them. */
export interface LeaseSource {
  /**
   * Up to `maxJobs` jobs of the worker's tasks; when none is claimable, wait a while for work (possibly answering
   * none). When `signal` aborts (the worker stops), a lease parked waiting for work rejects at once (the server
   * claims nothing more for it); one whose answer may already be on its way is let to arrive — cut, its jobs would
   * sit `running` until their leases expire — and the loop releases what it brings; unless `cut` aborts (it was
   * still unanswered a while after the stop: stuck on a slow server), which ends any lease at once. Called up to
   * `LEASES_IN_FLIGHT` (2) times at once: only while the backlog is deep, so a lease that waits for work is alone.
   */
  lease(maxJobs: number, signal: AbortSignal, cut?: AbortSignal): Promise<LeasedJob[]>;
  /** Record the outcomes (at most `MAX_BATCH`); a repeat is never applied twice. On rejection they are left to their leases' expiry. */
  ack(outcomes: Recorded[]): Promise<void>;
  /** Extend the leases, `[job id, lease token]` pairs (at most `MAX_BATCH`); per item, whether it still held. */
  heartbeat(leases: [string, string][]): Promise<boolean[]>;
  /**
   * Give back held jobs not started, `[job id, lease token]` pairs (at most `MAX_BATCH`): each is claimable again at
   * once, as before this delivery, no retry counted. Per item, whether the lease still held it.
   */
  release(leases: [string, string][]): Promise<boolean[]>;
  /**
   * Extend one job's lease now and record `value` as its progress; rejects with a `LeaseLostError` or a
   * `NotFoundError` when the lease no longer holds (the loop then aborts the job's signal with that error).
   */
  progress(job: LeasedJob, value: unknown): Promise<void>;
  /**
   * The running workflow step `job` adds `steps` to its workflow under its lease (`POST /v1/worker/jobs/{id}/steps`);
   * resolves with the listed steps as they are now. Rejects with the client's errors (`LeaseLostError`,
   * `InvalidStateError`, `ValidationError`, …).
   */
  addSteps(job: LeasedJob, steps: NewStep[]): Promise<WorkflowStep[]>;
  /** The loop has stopped and every outcome is sent: let go of idle connections. */
  close(): void;
}

/** An outcome to record: the job, the lease it ran under, and how it ended. */
export interface Recorded {
  id: string;
  lease_token: string;
  outcome: Outcome;
}

/** The loop's settings, every default already applied (see `WorkerOptions` for their meaning). */
export interface LoopSettings {
  concurrency: number;
  prefetch: number | undefined;
  ackBatch: number;
  ackIntervalMs: number;
  /** How long a lease or heartbeat holds a job. */
  leaseMs: number;
  heartbeatMs: number;
  shutdownGraceMs: number;
  /** How much of a held job's lease, or of its time before its deadline beyond a typical run, must be left to start it (default 1 s, at most a quarter of the lease). */
  marginMs?: number | undefined;
  workerId: string;
  /** For the startup line: the source decides what it leases. */
  queues: readonly string[];
  onError: (error: unknown, job?: LeasedJob) => void;
  logger: WorkerLogger;
  logJobs: boolean;
}

/** The most items the server takes in one lease, ack, heartbeat or release. */
export const MAX_BATCH = 1000;
