/**
 * `client.triggers`: what an event starts — a job (`task`) or a workflow (`workflow`) — for every event whose name
 * (or prefix: `order.*`) and top-level payload values (`filter`) match, addressed by name (unique per tenant).
 * `client.events`: sending one.
 */

import { randomUUID } from "node:crypto";

import { paginate } from "./pagination.js";
import type { RequestOptions, Transport } from "./transport.js";
import type { CreateTrigger, EventAccepted, ListTriggersParams, Page, Trigger, UpdateTrigger } from "./types.js";

export class Triggers {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Add a trigger; a name already taken is an `InvalidStateError` (so this is never repeated by the client). */
  create(trigger: CreateTrigger, options: RequestOptions = {}): Promise<Trigger> {
    return this.#transport.call(
      (signal) => this.#transport.api.POST("/v1/triggers", { body: trigger, signal }),
      { ...options, safe: false },
    );
  }

  get(name: string, options: RequestOptions = {}): Promise<Trigger> {
    return this.#transport.call(
      (signal) => this.#transport.api.GET("/v1/triggers/{name}", { params: { path: { name } }, signal }),
      { ...options, safe: true },
    );
  }

  /** One page of triggers. */
  list(params: ListTriggersParams = {}, options: RequestOptions = {}): Promise<Page<Trigger>> {
    return this.#transport.call(
      (signal) => this.#transport.api.GET("/v1/triggers", { params: { query: params }, signal }),
      { ...options, safe: true },
    );
  }

  /** Every trigger, page after page. */
  iterate(params: ListTriggersParams = {}, options: RequestOptions = {}): AsyncIterableIterator<Trigger> {
    return paginate((cursor) => this.list(cursor === undefined ? params : { ...params, cursor }, options));
  }

  /** Change the fields given and leave the others; setting the same fields twice is harmless, so it is retried. */
  update(name: string, changes: UpdateTrigger, options: RequestOptions = {}): Promise<Trigger> {
    return this.#transport.call(
      (signal) => this.#transport.api.PATCH("/v1/triggers/{name}", { params: { path: { name } }, body: changes, signal }),
      { ...options, safe: true },
    );
  }

  /** Remove the trigger (the server answers 204); what it started stays. Not repeated: a repeat would be a 404. */
  async delete(name: string, options: RequestOptions = {}): Promise<void> {
    await this.#transport.call(
      (signal) => this.#transport.api.DELETE("/v1/triggers/{name}", { params: { path: { name } }, signal }),
      { ...options, safe: false },
    );
  }
}

export interface SendEventOptions extends RequestOptions {
  /**
   * The event's id (1–255 characters): a repeat within the day events are kept starts nothing again and answers
   * with what the first send started. Without one the client makes one, so that its own retries are safe.
   */
  id?: string | undefined;
}

export class Events {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Send an event: every enabled trigger it matches starts, in one transaction; answers what started. */
  send(name: string, payload: Record<string, unknown> = {}, options: SendEventOptions = {}): Promise<EventAccepted> {
    const { id, ...request } = options;
    const body = { name, payload, id: id ?? `qf-client-${randomUUID()}` };
    return this.#transport.call((signal) => this.#transport.api.POST("/v1/events", { body, signal }), { ...request, safe: true });
  }
}
