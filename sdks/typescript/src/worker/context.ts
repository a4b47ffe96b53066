/**
 * What a handler gets besides its payload: the `TaskContext` (the job, its `AbortSignal`, `progress`, `addSteps`),
 * and the reasons that signal aborts with.
 */

import { ArgumentError, InvalidStateError, QueueFlowError, ValidationError } from "../errors.js";
import { checkUnique, type NewStep } from "../steps.js";
import type { LeasedJob, WorkflowStep } from "../types.js";

export interface TaskContext {
  /** The job as leased, with its `delivery_count`, `retry_count`, `metadata`, … */
  readonly job: LeasedJob;
  /** Fires when the job must stop: lease lost (e.g. cancelled), deadline passed, or worker shutdown. */
  readonly signal: AbortSignal;
  /**
   * Report how far the task has come: `value` (any JSON, at most 64 KiB encoded) becomes the job's `progress`,
   * replacing the last one, and the lease is extended as by a heartbeat. Resolves false (and `signal` fires) if
   * the lease was lost, when nothing is recorded; rejects with a `ValidationError` for a value it cannot store.
   */
  progress(value: unknown): Promise<boolean>;
  /**
   * Add `steps` to the workflow this job's step runs in (`steps.task(..., { required_by: ["reduce"] })`,
   * `steps.signal(...)`, …), all or none, under this job's lease; resolves with the listed steps as they are now (a
   * new step whose dependencies are all done is already enqueued). Safe to repeat: a delivery run again after a crash
   * that adds the same steps adds nothing twice. Rejects with an `InvalidStateError` for a job that is no workflow
   * step or a `required_by` step past `pending`, a `LeaseLostError` once the lease is lost, a `ValidationError` for
   * a cycle or an unknown name, an `ArgumentError` for a name given twice.
   */
  addSteps(steps: readonly NewStep[]): Promise<WorkflowStep[]>;
}

/** What a context does with its job's lease: the loop's, once for every job. */
export interface JobLease {
  progress(held: HeldJob, value: unknown): Promise<boolean>;
  addSteps(held: HeldJob, steps: NewStep[]): Promise<WorkflowStep[]>;
}

export type TaskHandler<P = Record<string, unknown>> = (payload: P, ctx: TaskContext) => unknown;

/** The reason a held job's signal aborts when the worker stops before the job finishes. */
export class ShutdownError extends QueueFlowError {
  override name = "ShutdownError";
}

/** The reason a held job's signal aborts when its `deadline` (its `timeout_seconds`) passes. */
export class DeadlineError extends QueueFlowError {
  override name = "DeadlineError";
}

/** A job whose handler runs: its signal, its deadline's timer, and whether its lease is void. */
export class HeldJob {
  /**
   * Made when the handler first reads `ctx.signal` or the job is aborted, not before: an `AbortSignal` per job
   * costs more than a no-op job itself. Node 20 makes each one with `Object.setPrototypeOf`, and V8 then keeps
   * the object through young-generation collections: about 0.5 KB per signal went to the old generation, already
   * dead. Over 200,000 jobs that made 20 of the worker's 140 MB peak RSS.
   */
  #controller: AbortController | undefined;
  deadline: unknown;
  lost = false;

  constructor(readonly job: LeasedJob) {}

  get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    if (!this.signal.aborted) this.#controller?.abort(reason);
  }
}

/** What a handler gets: its `signal` is made on first read (see `HeldJob`). */
export class JobContext implements TaskContext {
  readonly job: LeasedJob;
  readonly #held: HeldJob;
  readonly #lease: JobLease;

  constructor(held: HeldJob, lease: JobLease) {
    this.job = held.job;
    this.#held = held;
    this.#lease = lease;
  }

  get signal(): AbortSignal {
    return this.#held.signal;
  }

  progress(value: unknown): Promise<boolean> {
    return this.#lease.progress(this.#held, value);
  }

  addSteps(steps: readonly NewStep[]): Promise<WorkflowStep[]> {
    if (!Array.isArray(steps)) return Promise.reject(new ArgumentError("addSteps takes a list of steps"));
    try {
      checkUnique(steps);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#lease.addSteps(this.#held, [...steps]);
  }
}

/**
 * What a local run's handler reported through its `ctx` (`worker.runLocal(..., lease)`), for a test to assert:
 * every `progress` value, and every step `addSteps` added, as the API would receive it.
 */
export class LocalLease {
  /** The fake job of the run (set when it starts). */
  job: LeasedJob | undefined;
  readonly progressReports: unknown[] = [];
  readonly addedSteps: NewStep[] = [];

  /** As `addSteps` on a server: a job that is no workflow step is refused, and so is a name added before. */
  add(steps: NewStep[]): WorkflowStep[] {
    const step = this.job?.workflow_step_id;
    if (!step) {
      throw new InvalidStateError(409, "invalid_state", "addSteps: this job is not a workflow step (runLocal(..., { workflow_step_id: ... }))");
    }
    const taken = steps.filter((added) => this.addedSteps.some((earlier) => earlier.name === added.name)).map((added) => added.name);
    if (taken.length > 0) {
      throw new ValidationError(400, "validation_error", `steps already added in this run: ${taken.sort().join(", ")}`);
    }
    const sent = JSON.parse(JSON.stringify(steps)) as NewStep[];
    this.addedSteps.push(...sent);
    return asPending(sent, step);
  }
}

/** Steps just added by the step `addedBy`, as a workflow would list them before any of them ran. */
export function asPending(steps: readonly NewStep[], addedBy: string | null): WorkflowStep[] {
  return steps.map((added) => ({
    name: added.name,
    task_name: added.task_name ?? null,
    status: "pending",
    job_id: null,
    depends_on: added.depends_on ?? [],
    on_failure: added.on_failure ?? "halt",
    wait: added.wait ?? null,
    due_at: null,
    added_by: addedBy,
  }));
}

/**
 * The context `runLocal` gives a handler: `job` is a running job made of `fields` over defaults, its signal never
 * aborts, `progress` answers true and `addSteps` answers the steps as pending ones, both recorded on `lease`
 * (reported to no one: the job exists nowhere).
 */
export function localContext(
  taskName: string,
  queueName: string,
  payload: Record<string, unknown>,
  fields: Partial<LeasedJob>,
  lease: LocalLease = new LocalLease(),
): TaskContext {
  const now = new Date().toISOString();
  const job: LeasedJob = {
    id: "job_local",
    tenant_id: "local",
    queue_name: queueName,
    task_name: taskName,
    payload,
    status: "running",
    priority: 0,
    scheduled_at: now,
    locked_until: null,
    delivery_count: 1,
    retry_count: 0,
    max_retries: 3,
    backoff: { strategy: "exponential", base_seconds: 1, max_seconds: 3600, jitter: true },
    timeout_seconds: null,
    next_retry_at: null,
    result: null,
    error_message: null,
    workflow_id: null,
    workflow_step_id: null,
    metadata: {},
    idempotency_key: null,
    concurrency_key: null,
    unique_key: null,
    expires_at: null,
    created_at: now,
    started_at: now,
    completed_at: null,
    lease_token: "local",
    deadline: null,
    claimed_after_seconds: 0,
    progress: null,
    trace_context: null,
    ...fields,
  };
  if (job.workflow_step_id && !job.workflow_id) job.workflow_id = "wf_local"; // a step is always of some workflow
  lease.job = job;
  return {
    job,
    signal: new AbortController().signal,
    progress: (value) => {
      lease.progressReports.push(JSON.parse(JSON.stringify(value ?? null)));
      return Promise.resolve(true);
    },
    addSteps: (steps) => {
      try {
        checkUnique(steps);
        return Promise.resolve(lease.add([...steps]));
      } catch (error) {
        return Promise.reject(error);
      }
    },
  };
}
