/** `client.schedules`: cron schedules, addressed by their name (unique per tenant). */

import { paginate } from "./pagination.js";
import type { RequestOptions, Transport } from "./transport.js";
import type { CreateSchedule, ListSchedulesParams, Page, Schedule, UpdateSchedule } from "./types.js";

export class Schedules {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Add a schedule; a name already taken is an `InvalidStateError` (so this is never repeated by the client). */
  create(schedule: CreateSchedule, options: RequestOptions = {}): Promise<Schedule> {
    return this.#transport.call(
      (signal) => this.#transport.api.POST("/v1/schedules", { body: schedule, signal }),
      { ...options, safe: false },
    );
  }

  get(name: string, options: RequestOptions = {}): Promise<Schedule> {
    return this.#transport.call(
      (signal) => this.#transport.api.GET("/v1/schedules/{name}", { params: { path: { name } }, signal }),
      { ...options, safe: true },
    );
  }

  /** One page of schedules. */
  list(params: ListSchedulesParams = {}, options: RequestOptions = {}): Promise<Page<Schedule>> {
    return this.#transport.call(
      (signal) => this.#transport.api.GET("/v1/schedules", { params: { query: params }, signal }),
      { ...options, safe: true },
    );
  }

  /** Every schedule, page after page. */
  iterate(params: ListSchedulesParams = {}, options: RequestOptions = {}): AsyncIterableIterator<Schedule> {
    return paginate((cursor) => this.list(cursor === undefined ? params : { ...params, cursor }, options));
  }

  /** Change the fields given and leave the others; setting the same fields twice is harmless, so it is retried. */
  update(name: string, changes: UpdateSchedule, options: RequestOptions = {}): Promise<Schedule> {
    return this.#transport.call(
      (signal) => this.#transport.api.PATCH("/v1/schedules/{name}", { params: { path: { name } }, body: changes, signal }),
      { ...options, safe: true },
    );
  }

  /** Remove the schedule (the server answers 204); jobs it already enqueued stay. Not repeated: a repeat would be a 404. */
  async delete(name: string, options: RequestOptions = {}): Promise<void> {
    await this.#transport.call(
      (signal) => this.#transport.api.DELETE("/v1/schedules/{name}", { params: { path: { name } }, signal }),
      { ...options, safe: false },
    );
  }
}
