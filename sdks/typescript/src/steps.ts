/**
 * Workflow definitions written as code: a step is a task to run or a wait, named, with what it waits for.
 *
 *     const draft = steps.task("draft", "write_draft", { doc: 7 });
 *     const approval = steps.signal("approval", { timeout_seconds: 24 * 3600, depends_on: [draft] });
 *     const publish = steps.task("publish", "publish_doc", {}, { depends_on: [approval], on_failure: "skip" });
 *     await client.workflows.create(steps.workflow("review", [draft, approval, publish], { context: { doc: 7 } }));
 *
 * `depends_on` and `required_by` take step names or the steps themselves. The same steps go to
 * `ctx.addSteps([...])` from a handler running a workflow step, where `required_by` names existing steps that must
 * now also wait for the new one (map/reduce: `split` adds `map_0..map_n`, each `required_by: ["reduce"]`). Each
 * builder returns the step as the API takes it (plain JSON), so a test can compare it.
 *
 * The client checks only what is plain from the steps alone — a name given twice is an `ArgumentError` before any
 * request; everything else (a cycle, an unknown dependency, a wait with a job field) is the server's 400.
 */

import { ArgumentError } from "./errors.js";
import type { Backoff } from "./types.js";

export type OnFailure = "halt" | "skip" | "continue";

/** What a wait step waits for: a signal (failing after `timeout_seconds`, if given), or a number of seconds. */
export type Wait = { signal: string; timeout_seconds?: number } | { seconds: number };

/**
 * A step to create, or to add from a running step: a job of `task_name`, a `wait`, or a child `workflow` (exactly
 * one of the three). `required_by` only for a step added at run time.
 */
export interface NewStep {
  name: string;
  task_name?: string;
  wait?: Wait;
  workflow?: WorkflowDefinition;
  payload?: Record<string, unknown>;
  depends_on?: string[];
  required_by?: string[];
  on_failure?: OnFailure;
  queue_name?: string;
  priority?: number;
  max_retries?: number;
  backoff?: Backoff;
  timeout_seconds?: number | null;
  concurrency_key?: string | null;
}

/** A step named by its name, or the step itself. */
export type StepRef = string | { readonly name: string };

/** What every step may say about its place in the graph. */
export interface StepOptions {
  depends_on?: readonly StepRef[];
  required_by?: readonly StepRef[];
  on_failure?: OnFailure;
}

/** A task step's job options (left out: the server's default). */
export interface TaskStepOptions extends StepOptions {
  queue_name?: string;
  priority?: number;
  max_retries?: number;
  backoff?: Backoff;
  timeout_seconds?: number | null;
  concurrency_key?: string | null;
}

export interface SignalStepOptions extends StepOptions {
  /** The signal's name (default: the step's). */
  signal?: string;
  /** Fail the step if no signal came this long after it started waiting (its `on_failure` applies). */
  timeout_seconds?: number;
}

/** A workflow to create (`client.workflows.create(definition)`, or a schedule's `workflow`). */
export interface WorkflowDefinition {
  name: string;
  context: Record<string, unknown>;
  steps: NewStep[];
  /** Its deadline: still running this long after it starts (or is retried), it fails as a halt would end it. */
  timeout_seconds?: number;
}

function names(refs: readonly StepRef[] | undefined, what: string): string[] {
  if (refs === undefined) return [];
  if (!Array.isArray(refs)) throw new ArgumentError(`${what} takes a list of steps or names`);
  return refs.map((ref) => {
    if (typeof ref === "string") return ref;
    if (ref !== null && typeof ref === "object" && typeof ref.name === "string") return ref.name;
    throw new ArgumentError(`${what} takes steps or step names, not ${String(ref)}`);
  });
}

/** The graph options as the API takes them (`required_by` only when given: a created step may not carry it). */
function placed(name: string, options: StepOptions): NewStep {
  const required = names(options.required_by, "required_by");
  return {
    name,
    depends_on: names(options.depends_on, "depends_on"),
    on_failure: options.on_failure ?? "halt",
    ...(required.length > 0 ? { required_by: required } : {}),
  };
}

/** A step that runs one job of `taskName` on `payload` (plus `_context`: every completed step's result). */
function task(name: string, taskName: string, payload: Record<string, unknown> = {}, options: TaskStepOptions = {}): NewStep {
  const { depends_on, required_by, on_failure, ...job } = options;
  const fields = Object.fromEntries(Object.entries(job).filter(([, value]) => value !== undefined));
  return { ...placed(name, { depends_on, required_by, on_failure }), task_name: taskName, payload, ...fields };
}

/**
 * A step that waits, holding no worker, for the signal `options.signal` (default: the step's name), sent with
 * `client.workflows.signal(workflowId, signal, payload)`; the payload becomes its result. A signal sent before
 * the step waits is kept for it.
 */
function signal(name: string, options: SignalStepOptions = {}): NewStep {
  const wait: Wait =
    options.timeout_seconds === undefined
      ? { signal: options.signal ?? name }
      : { signal: options.signal ?? name, timeout_seconds: options.timeout_seconds };
  return { ...placed(name, options), wait };
}

/** A step that completes `seconds` after it starts waiting, with result null: a row with a due time, no worker held. */
function sleep(name: string, seconds: number, options: StepOptions = {}): NewStep {
  return { ...placed(name, options), wait: { seconds } };
}

/**
 * A step that runs the whole workflow `child` (a `steps.workflow(...)`) as a child: created once when the step's
 * dependencies are done, its context `child.context` plus `parent` and the parent's context under
 * `parent_context`. The step completes with the child's final context when the child completes, and fails (its
 * `on_failure` applies) when it fails, partially fails or is cancelled; cancelling the parent cancels the child.
 */
function child(name: string, workflow: WorkflowDefinition, options: StepOptions = {}): NewStep {
  if (workflow === null || typeof workflow !== "object" || !Array.isArray(workflow.steps)) {
    throw new ArgumentError("steps.child takes a steps.workflow(...)");
  }
  return { ...placed(name, options), workflow };
}

/** An `ArgumentError` naming every step name given more than once (the server would refuse them all). */
export function checkUnique(given: readonly { name: string }[]): void {
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const { name } of given) (seen.has(name) ? twice : seen).add(name);
  if (twice.size > 0) {
    throw new ArgumentError(`step names must be unique, and these are given more than once: ${[...twice].sort().join(", ")}`);
  }
}

/**
 * The workflow `name` of `steps` (in any order), starting with `options.context`; with `options.timeout_seconds`,
 * it fails if still running that long after it starts.
 */
function workflow(
  name: string,
  given: readonly NewStep[],
  options: { context?: Record<string, unknown>; timeout_seconds?: number } = {},
): WorkflowDefinition {
  checkUnique(given);
  const definition: WorkflowDefinition = { name, context: options.context ?? {}, steps: [...given] };
  return options.timeout_seconds === undefined ? definition : { ...definition, timeout_seconds: options.timeout_seconds };
}

/**
 * The step builders: `steps.task`, `steps.signal`, `steps.sleep`, `steps.child`, and `steps.workflow` to put them
 * together.
 */
export const steps = { task, signal, sleep, child, workflow } as const;
