/**
 * A compile-time test: never run, only type-checked (`npm run typecheck` / `npm run build`). Each
 * `@ts-expect-error` asserts that the line below does not compile; if the types ever stop catching the
 * mistake, the directive is unused and tsc fails.
 */

import { QueueFlow, Worker, type Job } from "../src/index.js";

export function typeChecks(client: QueueFlow, worker: Worker): void {
  // @ts-expect-error -- task_name is required
  void client.jobs.enqueue({ payload: {} });
  // @ts-expect-error -- "exponentially" is not a backoff strategy
  void client.jobs.enqueue({ task_name: "t", backoff: { strategy: "exponentially" } });
  // @ts-expect-error -- "done" is not a job status
  void client.jobs.list({ status: "done" });
  // @ts-expect-error -- priority is a number
  void client.jobs.enqueue({ task_name: "t", priority: "high" });
  // @ts-expect-error -- unknown fields are rejected
  void client.jobs.enqueue({ task_name: "t", queue: "default" });
  // @ts-expect-error -- a job's status is a closed set
  const status: Job["status"] = "finished";
  void status;
  // @ts-expect-error -- enqueueMany takes a list
  void client.jobs.enqueueMany({ task_name: "t" });
  // @ts-expect-error -- the handler's payload type is what the task declares
  worker.task<{ to: string }>("send_email", (payload) => payload.subject.toUpperCase());
  // @ts-expect-error -- a typed route: there is no /v1/job
  void client.api.GET("/v1/job");

  // And the right calls compile.
  void client.jobs.enqueue({ task_name: "t", backoff: { strategy: "linear", base_seconds: 2 }, priority: 1 });
  void client.jobs.list({ status: "dead_letter", limit: 10 });
  worker.task<{ to: string }>("send_email", async (payload, ctx) => ({ sent: payload.to, id: ctx.job.id }));
}
