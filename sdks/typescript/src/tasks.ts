/**
 * Typed tasks: `defineTask<Payload, Result>(name)` ties a task's name to its payload and result types, for both
 * sides of the queue. A wrong payload fails to compile, and so does a handler that returns the wrong result.
 *
 *     const sendEmail = defineTask<{ to: string }, { sent: boolean }>("send_email");
 *     worker.task(sendEmail, async (payload) => ({ sent: await send(payload.to) }));
 *     const job = await sendEmail.enqueue(client, { to: "ada@example.com" });
 *     const done = await sendEmail.get(client, job.id); // done.result: { sent: boolean } | null
 *
 * A definition holds only the name: share it between the code that enqueues and the worker.
 */

import type { EnqueueOptions, QueueFlow } from "./client.js";
import type { RequestOptions } from "./transport.js";
import type { BatchItem, EnqueueJob, Job } from "./types.js";

/** A job of a task whose result has the task's result type (null until it completes). */
export type TypedJob<R> = Omit<Job, "result"> & { result: R | null };

/** The fields of an enqueue besides the task and its payload: queue, priority, delay, retries, … */
export type JobFields = Omit<EnqueueJob, "task_name" | "payload">;

export class TaskDefinition<P extends object, R> {
  /** Never set: carries the types for `Worker.task` to read. */
  declare readonly types?: { payload: P; result: R };

  constructor(readonly name: string) {}

  /** Enqueue a job of this task. */
  async enqueue(client: QueueFlow, payload: P, fields: JobFields = {}, options: EnqueueOptions = {}): Promise<TypedJob<R>> {
    const job = await client.jobs.enqueue({ ...fields, task_name: this.name, payload: payload as EnqueueJob["payload"] }, options);
    return job as TypedJob<R>;
  }

  /** One item of `client.jobs.enqueueMany`. */
  job(payload: P, fields: Omit<BatchItem, "task_name" | "payload"> = {}): BatchItem {
    return { ...fields, task_name: this.name, payload: payload as BatchItem["payload"] };
  }

  /** Read a job of this task, its result typed. */
  async get(client: QueueFlow, jobId: string, options: RequestOptions = {}): Promise<TypedJob<R>> {
    return (await client.jobs.get(jobId, options)) as TypedJob<R>;
  }
}

/** Define the task `name` with its payload and result types. */
export function defineTask<P extends object, R = unknown>(name: string): TaskDefinition<P, R> {
  return new TaskDefinition<P, R>(name);
}
