/**
 * The one place a request leaves the process: openapi-fetch for the typed request, plus the per-attempt
 * timeout, the retry policy and the translation of every failure into the `errors` tree.
 */

import createClient, { type Client } from "openapi-fetch";

import { APIError, ConnectionError, TimeoutError, UnavailableError, apiError } from "./errors.js";
import type { paths } from "./generated/schema.js";
import { serializeBody } from "./json.js";
import { type Answered, KeepAlive } from "./keepalive.js";
import { loadOtel, traceHeaders } from "./tracing.js";
import { USER_AGENT } from "./version.js";

export interface TransportOptions {
  /** Where the server listens, e.g. `http://127.0.0.1:8000`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <token>`; omit against a development-mode server. */
  token?: string | undefined;
  /** How long one attempt may take before it is abandoned with a `TimeoutError` (default 30 s). */
  timeoutMs?: number | undefined;
  /** How many times a safe call is repeated after a connection error or a 503 (default 2). */
  maxRetries?: number | undefined;
  /** A `fetch` to use instead of the global one (tests, proxies, instrumentation). */
  fetch?: typeof globalThis.fetch | undefined;
}

/** Per-call options every method accepts. */
export interface RequestOptions {
  /** Aborts the call (and its retries); the promise rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** Overrides the client's `timeoutMs` for this call. */
  timeoutMs?: number | undefined;
}

interface CallOptions extends RequestOptions {
  /** Whether repeating the request cannot do anything twice: only such calls are retried. */
  safe: boolean;
}

type Attempt<T> = (signal: AbortSignal) => Promise<Answered<T>>;

/** The worker's routes: called thousands of times a second by a busy worker. */
export type WorkerRoute = "/v1/worker/lease" | "/v1/worker/ack" | "/v1/worker/heartbeat" | "/v1/worker/release";
type JsonBody<P extends WorkerRoute> = NonNullable<paths[P]["post"]["requestBody"]>["content"]["application/json"];
type JsonAnswer<P extends WorkerRoute> = paths[P]["post"]["responses"][200]["content"]["application/json"];

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_RETRIES = 2;
const MAX_RETRY_DELAY_MS = 8_000;

export class Transport {
  readonly timeoutMs: number;
  readonly #maxRetries: number;
  readonly #baseUrl: string;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof globalThis.fetch | undefined;
  #api: Client<paths> | undefined;
  /** The worker routes' way when no `fetch` was given (see keepalive.ts). */
  readonly #keepAlive: KeepAlive | undefined;

  constructor(options: TransportOptions) {
    if (!options.baseUrl) throw new TypeError("baseUrl is required, e.g. http://127.0.0.1:8000");
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    this.#headers = { Accept: "application/json", "User-Agent": USER_AGENT };
    if (options.token) this.#headers.Authorization = `Bearer ${options.token}`;
    this.#baseUrl = options.baseUrl;
    this.#fetch = options.fetch;
    this.#keepAlive = options.fetch ? undefined : new KeepAlive(options.baseUrl, this.#headers);
    // Loaded now, so that the first request already carries the caller's trace context (see `traceHeaders`).
    void loadOtel();
  }

  /**
   * The generated, typed openapi-fetch client: every route of the spec, for what the wrappers do not cover.
   * Made on first use: creating it reads `globalThis.Request`, which loads all of Node's fetch (undici, TLS,
   * about 7 MB RSS), and a worker without a `fetch` option may never need it.
   */
  get api(): Client<paths> {
    this.#api ??= createClient<paths>({
      baseUrl: this.#baseUrl,
      headers: this.#headers,
      bodySerializer: serializeBody,
      fetch: naming(this.#fetch ?? globalThis.fetch),
    });
    return this.#api;
  }

  /** Run `attempt` until it answers 2xx, retrying connection errors and 503s when the call is safe. */
  call<T>(attempt: Attempt<T>, options: CallOptions): Promise<T> {
    return this.#retrying(() => this.#once(attempt, options), options);
  }

  /**
   * POST to a worker route, as `call` does through openapi-fetch; without a `fetch` option, over `node:http`
   * with a keep-alive agent instead (see keepalive.ts), with the same timeout, retries and errors.
   */
  post<P extends WorkerRoute>(path: P, body: JsonBody<P>, options: CallOptions): Promise<JsonAnswer<P>> {
    return this.#post(path, body, options, true);
  }

  /**
   * `post` for a caller that does not read the answer (the ack: its outcomes are settled whatever it says): over
   * `node:http`, a 2xx answer's body is not even parsed. A failure still rejects as `post`'s does.
   */
  async send<P extends WorkerRoute>(path: P, body: JsonBody<P>, options: CallOptions): Promise<void> {
    await this.#post(path, body, options, false);
  }

  #post<P extends WorkerRoute>(path: P, body: JsonBody<P>, options: CallOptions, read: boolean): Promise<JsonAnswer<P>> {
    const keepAlive = this.#keepAlive;
    if (!keepAlive) {
      return this.call((signal) => this.api.POST(path as "/v1/worker/ack", { body: body as JsonBody<"/v1/worker/ack">, signal }) as never, options);
    }
    const json = serializeBody(body);
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    return this.#retrying(() => keepAlive.post<JsonAnswer<P>>(path, json, timeoutMs, options.signal, read), options);
  }

  /** Close idle keep-alive sockets (a stopped worker leaves none open). */
  close(): void {
    this.#keepAlive?.close();
  }

  async #retrying<T>(once: () => Promise<Answered<T>>, options: CallOptions): Promise<T> {
    const retries = options.safe ? this.#maxRetries : 0;
    for (let tries = 0; ; tries++) {
      let failure: APIError | ConnectionError;
      try {
        const { data, error, response } = await once();
        if (response.ok) return data as T;
        failure = apiError(response, error);
      } catch (error) {
        if (!(error instanceof ConnectionError)) throw error;
        failure = error;
      }
      const retryable = failure instanceof ConnectionError || failure instanceof UnavailableError;
      if (!retryable || tries >= retries) throw failure;
      await sleep(retryDelay(tries, failure), options.signal);
    }
  }

  async #once<T>(attempt: Attempt<T>, options: CallOptions): Promise<Answered<T>> {
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const outer = options.signal;
    if (outer?.aborted) throw outer.reason;
    // A timer cleared once the answer is in, not `AbortSignal.timeout`: that one's timer (and the signal it holds)
    // stayed alive for the whole `timeoutMs` after the request ended, a few thousand at once in a busy worker,
    // each surviving young-generation collections into the old generation.
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new DOMException(`no answer within ${timeoutMs} ms`, "TimeoutError"));
    }, timeoutMs);
    const onAbort = () => controller.abort(outer?.reason);
    outer?.addEventListener("abort", onAbort, { once: true });
    try {
      return await attempt(controller.signal);
    } catch (error) {
      if (outer?.aborted) throw outer.reason;
      if (timedOut) throw new TimeoutError(`no answer from ${this.#baseUrl} within ${timeoutMs} ms`, { cause: error });
      // A ConnectionError from `naming`; anything else (an ArgumentError, a bug) surfaces as is.
      throw error;
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener("abort", onAbort);
    }
  }
}

/** `fetch`, whose network failures (a TypeError, whatever the cause) become a ConnectionError naming the request. */
function naming(fetch: typeof globalThis.fetch): (request: Request, init?: RequestInit) => Promise<Response> {
  return async (request, init) => {
    for (const [name, value] of Object.entries(traceHeaders())) request.headers.set(name, value);
    try {
      return await fetch(request, init);
    } catch (error) {
      if (!(error instanceof TypeError)) throw error;
      throw new ConnectionError(`cannot reach QueueFlow at ${request.method} ${request.url}: ${describe(error)}`, { cause: error });
    }
  };
}

function describe(error: TypeError): string {
  const cause = error.cause as { code?: string; message?: string } | undefined;
  return cause?.code ?? cause?.message ?? error.message;
}

/** Exponential backoff with jitter (0.25 s, 0.5 s, 1 s, … capped), or the server's `Retry-After`. */
function retryDelay(tries: number, failure: APIError | ConnectionError): number {
  const retryAfter = failure instanceof APIError ? Number(failure.headers.get("retry-after")) : Number.NaN;
  if (Number.isFinite(retryAfter) && retryAfter >= 0) return Math.min(retryAfter * 1000, MAX_RETRY_DELAY_MS);
  const ceiling = Math.min(250 * 2 ** tries, MAX_RETRY_DELAY_MS);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
