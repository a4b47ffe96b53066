/** `Tasks`: how the worker loop runs a job's handler, and what it does with a job of a task it has no handler for. */

import { type Outcome, failure } from "../outcomes.js";
import { traced } from "../tracing.js";
import type { LeasedJob } from "../types.js";
import { type HeldJob, JobContext, type JobLease, type TaskHandler } from "./context.js";
import type { LoopSettings } from "./ports.js";

export class Tasks {
  /** Task names already warned about: a job of a task this worker has no handler for. */
  readonly #unknown = new Set<string>();

  constructor(
    readonly handlers: ReadonlyMap<string, TaskHandler<never>>,
    readonly settings: LoopSettings,
  ) {}

  /** Not an async function: a handler's promise is the one promise waited on, with no others chained to it. */
  execute(held: HeldJob, lease: JobLease): Promise<Outcome> {
    const { job } = held;
    const handler = this.handlers.get(job.task_name);
    if (!handler) return Promise.resolve(this.#unknownTask(job));
    try {
      const result = traced(job, () => handler(job.payload as never, new JobContext(held, lease)));
      return Promise.resolve(result).then(completed, failure);
    } catch (error) {
      return Promise.resolve(failure(error)); // thrown before the handler's promise (or by a function handler)
    }
  }

  /** A job the server should not have sent (it leases only this worker's tasks): dead-lettered, said once per task. */
  #unknownTask(job: LeasedJob): Outcome {
    const known = [...this.handlers.keys()].sort().join(", ");
    if (!this.#unknown.has(job.task_name)) {
      this.#unknown.add(job.task_name);
      this.settings.logger.warn(
        `worker ${this.settings.workerId}: leased job ${job.id} of task ${JSON.stringify(job.task_name)}, which this worker ` +
          `has no handler for (it has: ${known}): dead-lettering it (replay it from the dead-letter queue once a worker ` +
          "runs the task); further jobs of that task are not logged again",
      );
    }
    return { error: `no handler for task ${JSON.stringify(job.task_name)} on this worker (it has: ${known})`, retryable: false, said: true };
  }
}

function completed(result: unknown): Outcome {
  return { result: result === undefined ? null : result };
}
