/** Friendly names for the generated wire shapes; `src/generated/` stays exactly what the generator wrote. */

import type { components, operations } from "./generated/schema.js";

type Schemas = components["schemas"];

export type Job = Schemas["Job"];
export type LeasedJob = Schemas["LeasedJob"];
export type JobStatus = Job["status"];
export type Backoff = Schemas["Backoff"];
export type EnqueueJob = Schemas["EnqueueJob"];
/** `unique` of an enqueue: at most one job per tenant and `key` in `states` (or per `period_seconds` window); what
 * an enqueue that meets one does is `on_conflict`; `debounce_seconds` runs it that long after the last enqueue. */
export type Unique = Schemas["Unique"];
/** `sequence` of an enqueue: jobs of one tenant with the same `key` run one at a time, in the order they were
 * enqueued; `on_failure: "halt"` holds the later ones behind a dead-lettered job until it is replayed or
 * `sequences.resume(key)` is called. */
export type Sequence = Schemas["Sequence"];
/** The answer of `sequences.resume`: nothing blocks the sequence any more. */
export type SequenceResumed = Schemas["SequenceResumed"];
/** An item of `jobs.enqueueMany`: an `EnqueueJob` with its own optional `idempotency_key`. */
export type BatchItem = Schemas["BatchItem"];
/** A queue's counts and the tenant's settings for it: flow control (`null`: no limit) and `retention_seconds`
 * (`null`: the server's `--retention-hours`, or finished jobs are kept). */
export type Queue = Schemas["Queue"];
/** At most `jobs` leases per `per_seconds`, across all workers (a token bucket: burst `jobs`). */
export type RateLimit = Schemas["RateLimit"];
/** A PATCH of a queue's settings: an absent field stays as it is, `null` removes a limit (or the queue's own
 * retention). */
export type UpdateQueue = Schemas["UpdateQueue"];
export type AckResult = Schemas["AckResult"];
/** One item of a batched heartbeat: `ok` with the lease's new end, or `lease_lost` (`locked_until` null). */
export type HeartbeatResult = Schemas["HeartbeatResult"];

/** One page of a list: newest first; pass `next_cursor` back as `cursor` for the next page. */
export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

type NonNull<T> = { [K in keyof T]?: Exclude<T[K], null> };

/** Filters of `jobs.list`; `metadata` matches jobs whose metadata contains this object. */
export type ListJobsParams = Omit<NonNull<NonNullable<operations["listJobs"]["parameters"]["query"]>>, "metadata"> & {
  metadata?: Record<string, unknown>;
};

export type Workflow = Schemas["Workflow"];
export type WorkflowStatus = Workflow["status"];
export type WorkflowStep = Schemas["WorkflowStep"];
export type CreateWorkflow = Schemas["CreateWorkflow"];
export type NewWorkflowStep = Schemas["NewWorkflowStep"];
export type ListWorkflowsParams = NonNull<NonNullable<operations["listWorkflows"]["parameters"]["query"]>>;

export type Schedule = Schemas["Schedule"];
export type CreateSchedule = Schemas["CreateSchedule"];
export type UpdateSchedule = Schemas["UpdateSchedule"];
export type ListSchedulesParams = NonNull<NonNullable<operations["listSchedules"]["parameters"]["query"]>>;
export type Endpoint = Schemas["Endpoint"];
export type CreateEndpoint = Schemas["CreateEndpoint"];
export type UpdateEndpoint = Schemas["UpdateEndpoint"];
export type ListEndpointsParams = NonNull<NonNullable<operations["listEndpoints"]["parameters"]["query"]>>;

export type Trigger = Schemas["Trigger"];
export type CreateTrigger = Schemas["CreateTrigger"];
export type UpdateTrigger = Schemas["UpdateTrigger"];
export type ListTriggersParams = NonNull<NonNullable<operations["listTriggers"]["parameters"]["query"]>>;
export type EventAccepted = Schemas["EventAccepted"];
export type StartedItem = Schemas["StartedItem"];
