/** `client.endpoints`: push endpoints, URLs the server POSTs the tenant's jobs to as signed requests. */

import { paginate } from "./pagination.js";
import type { RequestOptions, Transport } from "./transport.js";
import type { CreateEndpoint, Endpoint, ListEndpointsParams, Page, UpdateEndpoint } from "./types.js";

export class Endpoints {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Add an endpoint. Its `secret` is in full only in this answer (and `rotateSecret`'s): keep it to verify deliveries
   * (`verifySignature`). A name already taken is an `InvalidStateError`, so this is never repeated by the client.
   */
  create(endpoint: CreateEndpoint, options: RequestOptions = {}): Promise<Endpoint> {
    return this.#transport.call(
      (signal) => this.#transport.api.POST("/v1/endpoints", { body: endpoint, signal }),
      { ...options, safe: false },
    );
  }

  get(name: string, options: RequestOptions = {}): Promise<Endpoint> {
    return this.#transport.call(
      (signal) => this.#transport.api.GET("/v1/endpoints/{name}", { params: { path: { name } }, signal }),
      { ...options, safe: true },
    );
  }

  /** One page of endpoints. */
  list(params: ListEndpointsParams = {}, options: RequestOptions = {}): Promise<Page<Endpoint>> {
    return this.#transport.call(
      (signal) => this.#transport.api.GET("/v1/endpoints", { params: { query: params }, signal }),
      { ...options, safe: true },
    );
  }

  /** Every endpoint, page after page. */
  iterate(params: ListEndpointsParams = {}, options: RequestOptions = {}): AsyncIterableIterator<Endpoint> {
    return paginate((cursor) => this.list(cursor === undefined ? params : { ...params, cursor }, options));
  }

  /** Change the fields given (`paused: true` stops new deliveries); setting the same fields twice is harmless. */
  update(name: string, changes: UpdateEndpoint, options: RequestOptions = {}): Promise<Endpoint> {
    return this.#transport.call(
      (signal) => this.#transport.api.PATCH("/v1/endpoints/{name}", { params: { path: { name } }, body: changes, signal }),
      { ...options, safe: true },
    );
  }

  /** A new secret, in full in this answer; for 24 h the previous one signs too. Not repeated: a repeat rotates again. */
  rotateSecret(name: string, options: RequestOptions = {}): Promise<Endpoint> {
    return this.#transport.call(
      (signal) => this.#transport.api.POST("/v1/endpoints/{name}/rotate-secret", { params: { path: { name } }, signal }),
      { ...options, safe: false },
    );
  }

  /** Remove the endpoint (204); deliveries in flight finish or expire. Not repeated: a repeat would be a 404. */
  async delete(name: string, options: RequestOptions = {}): Promise<void> {
    await this.#transport.call(
      (signal) => this.#transport.api.DELETE("/v1/endpoints/{name}", { params: { path: { name } }, signal }),
      { ...options, safe: false },
    );
  }
}
