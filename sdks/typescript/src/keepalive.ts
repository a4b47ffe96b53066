/**
 * A JSON POST over `node:http` (or `node:https`) on a keep-alive agent: the way the worker's lease, ack and
 * heartbeat calls go when no `fetch` was given, thousands a second in a busy worker.
 *
 * Why not `fetch`: Node's fetch (undici) makes a `Request`, a `Response`, an `AbortController` and their
 * `WeakRef`s and finalization-registry entries for every call. V8's young-generation collections keep whatever a
 * `WeakRef` points to, so each call's objects were promoted to the old generation already dead, and the survivors
 * made V8 grow the young generation to its maximum: a worker draining no-op jobs peaked at 140 MB RSS, 62–67 MB of
 * it V8 heap. Here a call is one `ClientRequest`, one timer cleared when the answer is in, and the answer's text.
 *
 * It answers what openapi-fetch would (`{ data }` for a 2xx, `{ error }` — the parsed problem, else the text —
 * otherwise) and fails the way `Transport` expects: a `ConnectionError` naming the method and URL, a
 * `TimeoutError`, or the caller's signal's reason.
 */

import { Agent as HttpAgent, type IncomingMessage, type RequestOptions, request as httpRequest } from "node:http";
import { createRequire } from "node:module";

import { ConnectionError, TimeoutError } from "./errors.js";
import { traceHeaders } from "./tracing.js";

/** What `Transport` needs of an answer: what openapi-fetch gives, with only the parts of a `Response` it reads. */
export interface Answered<T> {
  data?: T;
  error?: unknown;
  response: { ok: boolean; status: number; statusText: string; headers: Headers };
}

/**
 * Idle sockets are closed after this long, before the server's own keep-alive timeout (uvicorn's is 5 s) can
 * close one just as a request is written to it. undici's default is the same.
 */
const IDLE_SOCKET_MS = 4_000;

export class KeepAlive {
  readonly #base: URL;
  readonly #prefix: string;
  readonly #agent: HttpAgent;
  readonly #request: typeof httpRequest;
  readonly #headers: Record<string, string>;

  constructor(baseUrl: string, headers: Record<string, string>) {
    this.#base = new URL(baseUrl);
    this.#prefix = this.#base.pathname.replace(/\/$/, "");
    const options = { keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: "lifo" as const };
    if (this.#base.protocol === "https:") {
      // Loaded only for an https URL: `node:https` brings TLS and its memory along.
      const https = createRequire(import.meta.url)("node:https") as typeof import("node:https");
      this.#agent = new https.Agent(options);
      this.#request = https.request;
    } else {
      this.#agent = new HttpAgent(options);
      this.#request = httpRequest;
    }
    this.#headers = { ...headers, "Content-Type": "application/json" };
  }

  /**
   * POST `json` (already serialised) to `path` under the base URL; one attempt, no retries. With `read` false, a
   * 2xx answer's body is drained unread (`data` undefined): the caller has no use for it.
   */
  post<T>(path: string, json: string, timeoutMs: number, signal?: AbortSignal, read = true): Promise<Answered<T>> {
    const url = `${this.#base.origin}${this.#prefix}${path}`;
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      let failure: unknown;
      const fail = (error: unknown) => {
        failure ??= error;
        request.destroy();
      };
      // Encoded once, outside V8's heap: the socket writes these bytes as they are, and their length is the header.
      const body = Buffer.from(json);
      const options: RequestOptions = {
        protocol: this.#base.protocol,
        hostname: this.#base.hostname,
        port: this.#base.port,
        path: this.#prefix + path,
        method: "POST",
        agent: this.#agent,
        headers: { ...this.#headers, ...traceHeaders(), "Content-Length": body.length },
      };
      const request = this.#request(options);
      const timer = setTimeout(() => fail(new TimeoutError(`no answer from ${this.#base.origin} within ${timeoutMs} ms`)), timeoutMs);
      const onAbort = () => fail(signal?.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      const broken = (error: Error) => {
        settle();
        const code = (error as { code?: string }).code;
        reject(failure ?? new ConnectionError(`cannot reach QueueFlow at POST ${url}: ${code ?? error.message}`, { cause: error }));
      };
      request.on("error", broken);
      request.on("response", (response: IncomingMessage) => {
        // The body's bytes as they came, decoded once at the end: chunks decoded one by one (`setEncoding`) were
        // a string each, joined into a rope that `JSON.parse` then copies flat again — three copies in V8's heap.
        const chunks: Buffer[] = [];
        const keep = read || !isOk(response);
        response.on("data", (chunk: Buffer) => {
          if (keep) chunks.push(chunk);
        });
        response.on("error", broken);
        response.on("close", () => {
          if (!response.complete) broken(new Error("the connection closed before the answer was complete"));
        });
        response.on("end", () => {
          settle();
          if (failure !== undefined) return reject(failure);
          try {
            resolve(answered(response, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
          } catch (error) {
            reject(error);
          }
        });
      });
      request.end(body);
    });
  }

  /** Close the idle sockets now (a stopped worker keeps none open). */
  close(): void {
    this.#agent.destroy();
  }
}

function isOk(response: IncomingMessage): boolean {
  const status = response.statusCode ?? 0;
  return status >= 200 && status < 300;
}

function answered<T>(response: IncomingMessage, body: Buffer | undefined): Answered<T> {
  const status = response.statusCode ?? 0;
  const ok = isOk(response);
  const text = body?.toString() ?? "";
  if (ok) {
    // No `Headers` made: nothing reads a success's, and the first one made loads all of undici (about 7 MB).
    return {
      data: (text ? JSON.parse(text) : undefined) as T,
      response: {
        ok,
        status,
        statusText: response.statusMessage ?? "",
        get headers() {
          return new Headers();
        },
      },
    };
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    for (const each of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, each);
  }
  let error: unknown = text;
  try {
    error = JSON.parse(text);
  } catch {
    // Not JSON (a proxy's HTML page, say): the text itself, as openapi-fetch gives it.
  }
  return { error, response: { ok, status, statusText: response.statusMessage ?? "", headers } };
}
