/** `QueueFlow`: the tenant-side client (jobs, queues, workflows, schedules, endpoints, triggers, events, sequences), each a thin typed layer over the transport. */

import { randomUUID } from "node:crypto";

import { toJson } from "./json.js";
import { paginate } from "./pagination.js";
import { Endpoints } from "./endpoints.js";
import { Schedules } from "./schedules.js";
import { Events, Triggers } from "./triggers.js";
import { type RequestOptions, Transport } from "./transport.js";
import type { BatchItem, EnqueueJob, Job, ListJobsParams, Page, Queue, SequenceResumed, UpdateQueue } from "./types.js";
import { FINISHED_JOB, type WaitOptions, waitUntil } from "./waiting.js";
import { Workflows } from "./workflows.js";

export interface QueueFlowOptions {
  /** Where the server listens, e.g. `http://127.0.0.1:8000`. */
  baseUrl: string;
  /** A tenant key; omit against a development-mode server (no keys configured). */
  apiKey?: string | undefined;
  /** How long one attempt may take (default 30 000 ms). */
  timeoutMs?: number | undefined;
  /** Repeats of a safe call after a connection error or a 503 (default 2). */
  maxRetries?: number | undefined;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof globalThis.fetch | undefined;
}

export interface EnqueueOptions extends RequestOptions {
  /**
   * A repeat with the same key returns the original job instead of adding one. Without it the client
   * makes one up per call, so that its own retries after a lost answer never enqueue twice.
   */
  idempotencyKey?: string | undefined;
}

export class QueueFlow {
  readonly jobs: Jobs;
  readonly queues: Queues;
  readonly workflows: Workflows;
  readonly schedules: Schedules;
  readonly endpoints: Endpoints;
  readonly triggers: Triggers;
  readonly events: Events;
  readonly sequences: Sequences;
  /** The typed openapi-fetch client underneath, for routes these wrappers do not cover. */
  readonly api: Transport["api"];

  constructor(options: QueueFlowOptions) {
    const transport = new Transport({ ...options, token: options.apiKey });
    this.api = transport.api;
    this.jobs = new Jobs(transport);
    this.queues = new Queues(transport);
    this.workflows = new Workflows(transport);
    this.schedules = new Schedules(transport);
    this.endpoints = new Endpoints(transport);
    this.triggers = new Triggers(transport);
    this.events = new Events(transport);
    this.sequences = new Sequences(transport);
  }
}

export class Jobs {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Add one job; answers the job (the original one on an idempotent repeat). */
  enqueue(job: EnqueueJob, options: EnqueueOptions = {}): Promise<Job> {
    const key = options.idempotencyKey ?? `qf-client-${randomUUID()}`;
    return this.#transport.call(
      (signal) => this.#transport.api.POST("/v1/jobs", { body: job, params: { header: { "Idempotency-Key": key } }, signal }),
      { ...options, safe: true },
    );
  }

  /** Add 1–1000 jobs in one transaction, all or none; answers them in the order given. */
  async enqueueMany(jobs: BatchItem[], options: RequestOptions = {}): Promise<Job[]> {
    // Every item gets a key, so that repeating the batch after a lost answer resolves to the same jobs.
    const body = { jobs: jobs.map((job) => ({ ...job, idempotency_key: job.idempotency_key ?? `qf-client-${randomUUID()}` })) };
    const batch = await this.#transport.call(
      (signal) => this.#transport.api.POST("/v1/jobs/batch", { body, signal }),
      { ...options, safe: true },
    );
    return batch.jobs;
  }

  get(jobId: string, options: RequestOptions = {}): Promise<Job> {
    return this.#get(jobId, 0, options);
  }

  /**
   * The job once it has finished (completed, dead_letter or cancelled), answered by the server as soon as it does:
   * no polling. Rejects with a `WaitTimeoutError` if it is still unfinished after `timeoutMs`.
   */
  wait(jobId: string, options: WaitOptions = {}): Promise<Job> {
    return waitUntil(
      (waitSeconds, timeoutMs, signal) => this.#get(jobId, waitSeconds, { timeoutMs, signal }),
      (job) => FINISHED_JOB.has(job.status),
      options,
      `job ${jobId}`,
    );
  }

  /** Enqueue a job and wait for it to finish (`wait`): its `result` is the task's return value. */
  async run(job: EnqueueJob, options: EnqueueOptions & WaitOptions = {}): Promise<Job> {
    const { timeoutMs, signal, idempotencyKey } = options;
    const enqueued = await this.enqueue(job, { idempotencyKey, signal });
    return this.wait(enqueued.id, { timeoutMs, signal });
  }

  #get(jobId: string, waitSeconds: number, options: RequestOptions): Promise<Job> {
    const query = waitSeconds > 0 ? { wait_seconds: waitSeconds } : {};
    return this.#transport.call(
      (signal) => this.#transport.api.GET("/v1/jobs/{job_id}", { params: { path: { job_id: jobId }, query }, signal }),
      { ...options, safe: true },
    );
  }

  /** One page of jobs, newest first. */
  async list(params: ListJobsParams = {}, options: RequestOptions = {}): Promise<Page<Job>> {
    const { metadata, ...rest } = params;
    const query = metadata === undefined ? rest : { ...rest, metadata: toJson(metadata, "metadata") };
    return this.#transport.call(
      (signal) => this.#transport.api.GET("/v1/jobs", { params: { query }, signal }),
      { ...options, safe: true },
    );
  }

  /** Every job matching `params`, page after page: `for await (const job of client.jobs.iterate({ status: "pending" }))`. */
  iterate(params: ListJobsParams = {}, options: RequestOptions = {}): AsyncIterableIterator<Job> {
    return paginate((cursor) => this.list(cursor === undefined ? params : { ...params, cursor }, options));
  }

  /** Stop a pending, retrying or running job; a finished one is an `InvalidStateError`. */
  cancel(jobId: string, options: RequestOptions = {}): Promise<Job> {
    return this.#transport.call(
      (signal) => this.#transport.api.POST("/v1/jobs/{job_id}/cancel", { params: { path: { job_id: jobId } }, signal }),
      { ...options, safe: false },
    );
  }

  /** Put a dead-lettered or cancelled job back to `pending` with its retry count reset. */
  retry(jobId: string, options: RequestOptions = {}): Promise<Job> {
    return this.#transport.call(
      (signal) => this.#transport.api.POST("/v1/jobs/{job_id}/retry", { params: { path: { job_id: jobId } }, signal }),
      { ...options, safe: false },
    );
  }
}

export class Sequences {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Move the sequence `key` past the dead-lettered `halt` job that holds it (`NotFoundError`: no job has the key;
   * `InvalidStateError`: nothing blocks it). */
  resume(key: string, options: RequestOptions = {}): Promise<SequenceResumed> {
    return this.#transport.call(
      (signal) => this.#transport.api.POST("/v1/sequences/{key}/resume", { params: { path: { key } }, signal }),
      { ...options, safe: false },
    );
  }
}

export class Queues {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Every queue the tenant has jobs in, with its counts by state. */
  async list(options: RequestOptions = {}): Promise<Queue[]> {
    const answer = await this.#transport.call(
      (signal) => this.#transport.api.GET("/v1/queues", { signal }),
      { ...options, safe: true },
    );
    return answer.queues;
  }

  /** One queue's counts and settings (`NotFoundError` when it has neither jobs nor settings). */
  get(name: string, options: RequestOptions = {}): Promise<Queue> {
    return this.#transport.call(
      (signal) => this.#transport.api.GET("/v1/queues/{name}", { params: { path: { name } }, signal }),
      { ...options, safe: true },
    );
  }

  /** Change the settings given and leave the others (`null` removes a limit, or the queue's own `retention_seconds`); the same change twice is harmless, so it is retried. */
  update(name: string, changes: UpdateQueue, options: RequestOptions = {}): Promise<Queue> {
    return this.#transport.call(
      (signal) => this.#transport.api.PATCH("/v1/queues/{name}", { params: { path: { name } }, body: changes, signal }),
      { ...options, safe: true },
    );
  }

  /** Lease none of the tenant's jobs in this queue until `resume` (enqueue and running jobs go on). */
  pause(name: string, options: RequestOptions = {}): Promise<Queue> {
    return this.update(name, { paused: true }, options);
  }

  /** Lease the queue's jobs again; parked workers take them at once. */
  resume(name: string, options: RequestOptions = {}): Promise<Queue> {
    return this.update(name, { paused: false }, options);
  }
}
