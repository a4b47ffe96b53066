/** `HttpSource`: the worker loop's `LeaseSource` over the worker routes (`POST /v1/worker/…`). */

import type { components } from "../generated/schema.js";
import { Transport, type TransportOptions } from "../transport.js";
import type { NewStep } from "../steps.js";
import type { LeasedJob, WorkflowStep } from "../types.js";
import type { LeaseSource, Recorded } from "./ports.js";

type Schemas = components["schemas"];

export interface HttpSourceSettings {
  queues: string[];
  leaseSeconds: number;
  waitSeconds: number;
  workerId: string;
  /** The tasks to lease: only those the worker has handlers for, others are left to their workers. */
  taskNames: () => string[];
}

export class HttpSource implements LeaseSource {
  readonly #transport: Transport;
  readonly #settings: HttpSourceSettings;
  /** Whether the next lease may wait for work: only after one found none (a busy worker's leases answer at once). */
  #park = false;
  /**
   * The leases of this source in flight. One sent while another is in flight never waits for work: the loop overlaps
   * leases only while the backlog is deep (the last one came back full), so an idle worker parks one long-poll, not two.
   */
  #leasing = 0;

  constructor(transport: TransportOptions, settings: HttpSourceSettings) {
    this.#transport = new Transport(transport);
    this.#settings = settings;
  }

  /**
   * Once the server has claimed for a lease its answer may already be on its way — a long-poll's too, when work
   * arrived for it a moment before the stop: `signal` (the stop) does not cut it (its jobs would sit `running` until
   * their leases expire, each then counting a failed delivery; the chaos suite's rolling restarts saw it); the loop
   * releases what it brings — unless it is still unanswered when `cut` aborts, a while after the stop.
   */
  async lease(maxJobs: number, signal: AbortSignal, cut?: AbortSignal): Promise<LeasedJob[]> {
    const { leaseSeconds, workerId, queues } = this.#settings;
    const waitSeconds = this.#park && this.#leasing === 0 ? this.#settings.waitSeconds : 0;
    if (signal.aborted) return [];
    const body = {
      queues,
      max_jobs: maxJobs,
      lease_seconds: leaseSeconds,
      wait_seconds: waitSeconds,
      worker_id: workerId,
      task_names: this.#settings.taskNames(),
    };
    this.#leasing += 1;
    let answer: Schemas["LeasedJobs"];
    try {
      answer = await this.#transport.post(
        "/v1/worker/lease",
        body,
        // Not repeated by the transport: a lost answer's jobs come back when their lease expires.
        // A long-poll legitimately takes `waitSeconds`; only time beyond that is a slow server.
        // Cut only by `cut`: stuck on a slow server long after the stop.
        { safe: false, timeoutMs: this.#transport.timeoutMs + waitSeconds * 1000, signal: cut },
      );
    } finally {
      this.#leasing -= 1;
    }
    this.#park = answer.jobs.length === 0;
    return answer.jobs;
  }

  async ack(outcomes: Recorded[]): Promise<void> {
    const complete: Schemas["AckComplete"][] = [];
    const fail: Schemas["AckFail"][] = [];
    for (const { id, lease_token, outcome } of outcomes) {
      if ("result" in outcome) complete.push({ id, lease_token, result: outcome.result });
      else {
        fail.push({
          id,
          lease_token,
          error: outcome.error,
          retryable: outcome.retryable,
          ...(outcome.retryAfterSeconds === undefined ? {} : { retry_after_seconds: outcome.retryAfterSeconds }),
        });
      }
    }
    // Not repeated here: the loop makes it again on its clock while the leases may hold (a repeat is answered
    // `lease_lost`, never applied twice).
    await this.#transport.send("/v1/worker/ack", { complete, fail }, { safe: false });
  }

  async heartbeat(leases: [string, string][]): Promise<boolean[]> {
    const body = { jobs: leases.map(([id, lease_token]) => ({ id, lease_token })), lease_seconds: this.#settings.leaseSeconds };
    const answer = await this.#transport.post("/v1/worker/heartbeat", body, { safe: true });
    return answer.results.map((result) => result.outcome !== "lease_lost");
  }

  /**
   * Gives back held jobs not started, `[id, lease_token]` pairs (at most 1,000): each is claimable again at once,
   * as before that delivery (no retry counted). Per item, whether it was still held (and is now released).
   */
  async release(leases: [string, string][]): Promise<boolean[]> {
    const body = { jobs: leases.map(([id, lease_token]) => ({ id, lease_token })) };
    // Not repeated here: the loop makes it again (a repeat finds the lease gone, `lease_lost`, and changes nothing).
    const answer = await this.#transport.post("/v1/worker/release", body, { safe: false });
    return answer.results.map((result) => result.outcome === "ok");
  }

  async progress(job: LeasedJob, value: unknown): Promise<void> {
    await this.#transport.call(
      (signal) =>
        this.#transport.api.POST("/v1/worker/jobs/{job_id}/heartbeat", {
          params: { path: { job_id: job.id } },
          body: { lease_token: job.lease_token, lease_seconds: this.#settings.leaseSeconds, progress: value },
          signal,
        }),
      { safe: true },
    );
  }

  async addSteps(job: LeasedJob, steps: NewStep[]): Promise<WorkflowStep[]> {
    const answer = await this.#transport.call(
      (signal) =>
        this.#transport.api.POST("/v1/worker/jobs/{job_id}/steps", {
          params: { path: { job_id: job.id } },
          body: { lease_token: job.lease_token, steps },
          signal,
        }),
      // Repeated safely: the lease token keys it, and the same steps added again by the same step add nothing twice.
      { safe: true },
    );
    return answer.steps;
  }

  close(): void {
    this.#transport.close();
  }
}
