/**
 * A compile-time test: never run, only type-checked (`npm run typecheck` / `npm run build`). Each
 * `@ts-expect-error` asserts that the line below does not compile; if the types ever stop catching the
 * mistake, the directive is unused and tsc fails.
 */

import {
  QueueFlow,
  Worker,
  defineTask,
  type Job,
  type Page,
  type Schedule,
  type Workflow,
  type WorkflowStep,
  type components,
} from "../src/index.js";

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

  // Typed tasks: a definition ties the name to the payload and result types on both sides.
  const sendEmail = defineTask<{ to: string }, { sent: boolean }>("send_email");
  // @ts-expect-error -- the payload is the definition's
  void sendEmail.enqueue(client, { too: "ada@example.com" });
  // @ts-expect-error -- a field of the wrong type
  void sendEmail.enqueue(client, { to: 1 });
  // @ts-expect-error -- the handler returns the definition's result type
  worker.task(sendEmail, () => ({ sent: "yes" }));
  // @ts-expect-error -- the handler's payload is the definition's
  worker.task(sendEmail, (payload) => ({ sent: payload.subject === "" }));
  worker.task(sendEmail, async (payload) => ({ sent: payload.to.length > 0 }));
  void sendEmail.enqueue(client, { to: "ada@example.com" }, { priority: 5 }).then((job) => {
    const sent: boolean | undefined = job.result?.sent;
    // @ts-expect-error -- the result is typed: it has no `id`
    void job.result?.id;
    return sent;
  });

  // And the right calls compile.
  void client.jobs.enqueue({ task_name: "t", backoff: { strategy: "linear", base_seconds: 2 }, priority: 1 });
  void client.jobs.list({ status: "dead_letter", limit: 10 });
  worker.task<{ to: string }>("send_email", async (payload, ctx) => ({ sent: payload.to, id: ctx.job.id }));
}

export function workflowAndScheduleTypeChecks(client: QueueFlow): void {
  // @ts-expect-error -- "abort" is not an on_failure policy
  void client.workflows.create({ name: "w", steps: [{ name: "a", task_name: "t", on_failure: "abort" }] });
  // @ts-expect-error -- a step needs a name
  void client.workflows.create({ name: "w", steps: [{ task_name: "t" }] });
  // @ts-expect-error -- depends_on lists step names
  void client.workflows.create({ name: "w", steps: [{ name: "a", task_name: "t", depends_on: "b" }] });
  // @ts-expect-error -- "done" is not a workflow status
  void client.workflows.list({ status: "done" });
  // @ts-expect-error -- a workflow step's status is a closed set
  const stepStatus: WorkflowStep["status"] = "running";
  void stepStatus;
  // @ts-expect-error -- a schedule needs a cron
  void client.schedules.create({ name: "s", task_name: "t" });
  // @ts-expect-error -- enabled is a boolean
  void client.schedules.update("s", { enabled: "yes" });
  // @ts-expect-error -- a schedule's name is fixed: PATCH cannot rename it
  void client.schedules.update("s", { name: "t" });
  // @ts-expect-error -- schedules are listed by page only, there is no filter
  void client.schedules.list({ enabled: true });

  // And the right calls compile: the same ones with the mistake fixed, a partial PATCH, the full shapes.
  void client.workflows.create(
    { name: "w", steps: [{ name: "a", task_name: "t" }, { name: "b", task_name: "t", depends_on: ["a"], on_failure: "continue" }] },
    { idempotencyKey: "k" },
  );
  void client.workflows.list({ status: "partially_failed", limit: 10 });
  void client.schedules.create({ name: "s", cron: "0 3 * * *", task_name: "t" });
  void client.schedules.update("s", { enabled: false });
  const deleted: Promise<void> = client.schedules.delete("s");
  void deleted;
  void client.schedules.get("s").then((schedule: Schedule) => [schedule.tenant_id, schedule.updated_at, schedule.next_run_at]);
  void client.workflows.get("wf_x").then((workflow: Workflow) => workflow.steps.map((step) => step.job_id));
}

type Schemas = components["schemas"];
/** `true` only when A and B are the same type; mere assignability (an extra field on one side) is `false`. */
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function same<A, B>(equal: Equals<A, B>): void {
  void equal;
}

/**
 * The hand-written layer restates one wire shape, `Page<T>`, and unwraps three envelopes to their list. Every
 * other public type is an alias of a generated one. If the spec adds, drops or retypes a field in any of these,
 * `Equals` is `false` and the line does not compile (regenerate with `npm run generate`, then fix the layer).
 */
export function wireShapeChecks(): void {
  same<Page<Job>, Schemas["JobPage"]>(true);
  same<Page<Workflow>, Schemas["WorkflowPage"]>(true);
  same<Page<Schedule>, Schemas["SchedulePage"]>(true);
  // jobs.enqueueMany, queues.list and the worker's lease answer only the list: nothing else is in the envelope.
  same<keyof Schemas["JobBatch"], "jobs">(true);
  same<keyof Schemas["QueueList"], "queues">(true);
  same<keyof Schemas["LeasedJobs"], "jobs">(true);
}
