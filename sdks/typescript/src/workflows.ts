/** `client.workflows`: DAGs of jobs and waits whose steps run when their dependencies finish. */

import { randomUUID } from "node:crypto";

import { paginate } from "./pagination.js";
import type { WorkflowDefinition } from "./steps.js";
import type { RequestOptions, Transport } from "./transport.js";
import { type WaitOptions, waitUntil } from "./waiting.js";
import type { CreateWorkflow, ListWorkflowsParams, Page, Workflow } from "./types.js";

export interface CreateWorkflowOptions extends RequestOptions {
  /** A repeat with the same key answers the original workflow instead of starting another. */
  idempotencyKey?: string | undefined;
}

export class Workflows {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Validate the DAG and enqueue its root steps. As for jobs, a repeat with the same `idempotencyKey`
   * answers the original workflow; without one the client makes one up so its own retries start one workflow.
   */
  create(workflow: CreateWorkflow | WorkflowDefinition, options: CreateWorkflowOptions = {}): Promise<Workflow> {
    const key = options.idempotencyKey ?? `qf-client-${randomUUID()}`;
    const body = workflow as CreateWorkflow; // a definition is a CreateWorkflow whose steps `steps` built
    return this.#transport.call(
      (signal) => this.#transport.api.POST("/v1/workflows", { body, params: { header: { "Idempotency-Key": key } }, signal }),
      { ...options, safe: true },
    );
  }

  get(workflowId: string, options: RequestOptions = {}): Promise<Workflow> {
    return this.#get(workflowId, 0, options);
  }

  /** The workflow once it is no longer running, answered as soon as it finishes; `WaitTimeoutError` after `timeoutMs`. */
  wait(workflowId: string, options: WaitOptions = {}): Promise<Workflow> {
    return waitUntil(
      (waitSeconds, timeoutMs, signal) => this.#get(workflowId, waitSeconds, { timeoutMs, signal }),
      (workflow) => workflow.status !== "running",
      options,
      `workflow ${workflowId}`,
    );
  }

  #get(workflowId: string, waitSeconds: number, options: RequestOptions): Promise<Workflow> {
    const query = waitSeconds > 0 ? { wait_seconds: waitSeconds } : {};
    return this.#transport.call(
      (signal) =>
        this.#transport.api.GET("/v1/workflows/{workflow_id}", { params: { path: { workflow_id: workflowId }, query }, signal }),
      { ...options, safe: true },
    );
  }

  /** One page of workflows, newest first. */
  list(params: ListWorkflowsParams = {}, options: RequestOptions = {}): Promise<Page<Workflow>> {
    return this.#transport.call(
      (signal) => this.#transport.api.GET("/v1/workflows", { params: { query: params }, signal }),
      { ...options, safe: true },
    );
  }

  /** Every workflow matching `params`, page after page. */
  iterate(params: ListWorkflowsParams = {}, options: RequestOptions = {}): AsyncIterableIterator<Workflow> {
    return paginate((cursor) => this.list(cursor === undefined ? params : { ...params, cursor }, options));
  }

  /** Cancel every unfinished step (running step jobs too); a finished workflow is an `InvalidStateError`. */
  cancel(workflowId: string, options: RequestOptions = {}): Promise<Workflow> {
    return this.#transport.call(
      (signal) =>
        this.#transport.api.POST("/v1/workflows/{workflow_id}/cancel", { params: { path: { workflow_id: workflowId } }, signal }),
      { ...options, safe: false },
    );
  }

  /**
   * Send the signal `name` with `payload` (any JSON; it becomes the waiting step's result): a step waiting for it
   * completes now and the workflow advances before the answer; one not yet waiting keeps it. The same signal sent
   * again with an equal payload changes nothing (so the client repeats it safely). `NotFoundError` if no step waits
   * for `name`; `InvalidStateError` for another payload than the one received, a workflow no longer running, or a
   * step that can no longer wait (skipped, cancelled, timed out).
   */
  signal(workflowId: string, name: string, payload: unknown = null, options: RequestOptions = {}): Promise<Workflow> {
    return this.#transport.call(
      (signal) =>
        this.#transport.api.POST("/v1/workflows/{workflow_id}/signals/{name}", {
          params: { path: { workflow_id: workflowId, name } },
          body: { payload },
          signal,
        }),
      { ...options, safe: true },
    );
  }

  /**
   * Run a failed, partially failed or cancelled workflow again: its failed, cancelled and skipped steps go back to
   * pending (completed ones keep their results) and its ready steps are enqueued as new jobs before the answer.
   * `InvalidStateError` for a workflow in any other status (so it is never repeated by the client).
   */
  retry(workflowId: string, options: RequestOptions = {}): Promise<Workflow> {
    return this.#transport.call(
      (signal) =>
        this.#transport.api.POST("/v1/workflows/{workflow_id}/retry", { params: { path: { workflow_id: workflowId } }, signal }),
      { ...options, safe: false },
    );
  }
}
