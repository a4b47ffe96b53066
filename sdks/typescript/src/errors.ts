/**
 * Every error the client raises on purpose, one class per problem `code`:
 *
 * ```text
 * QueueFlowError
 * ├── ArgumentError               a value in the request JSON cannot carry (a Map, a Set, a BigInt, NaN): nothing sent
 * ├── SignatureVerificationError  a push delivery whose QueueFlow-Signature does not verify (`verifySignature`)
 * ├── APIError                    the server answered with a problem (status, code, detail, errors)
 * │   ├── ValidationError         400 validation_error
 * │   ├── AuthenticationError     401 unauthorized
 * │   ├── PermissionDeniedError   403 forbidden
 * │   ├── NotFoundError           404 not_found
 * │   ├── LeaseLostError          409 lease_lost
 * │   ├── InvalidStateError       409 invalid_state
 * │   ├── DuplicateError          409 duplicate (a `unique` rule met `existingJobId`; in a batch, the item at `index`)
 * │   ├── PayloadTooLargeError    413 payload_too_large
 * │   └── UnavailableError        503 unavailable (retried for safe calls)
 * ├── ConnectionError             no answer at all (retried for safe calls); the message names the URL
 * │   └── TimeoutError            no answer within `timeoutMs`
 * └── WaitTimeoutError            `jobs.wait`/`jobs.run`/`workflows.wait`: not finished within `timeoutMs`
 * ```
 *
 * A problem whose code this version does not know becomes a plain `APIError`, so catching by class
 * never misses a newer server's answer.
 */

import type { components } from "./generated/schema.js";

export type Problem = components["schemas"]["Problem"];
export type FieldProblem = components["schemas"]["FieldProblem"];
export type ProblemCode = Problem["code"];

export class QueueFlowError extends Error {
  override name = "QueueFlowError";
}

/** A value the client cannot send as given; the message names it by its path. Thrown before any request. */
export class ArgumentError extends QueueFlowError {
  override name = "ArgumentError";
}

/**
 * A request claiming to be a push delivery failed `verifySignature`: no or a malformed `QueueFlow-Signature`, a time
 * outside the tolerance, or no `v1=` matching the secret. Answer it 400 and do not run the job.
 */
export class SignatureVerificationError extends QueueFlowError {
  override name = "SignatureVerificationError";
}

export class APIError extends QueueFlowError {
  override name = "APIError";
  readonly status: number;
  /** The machine-readable problem code (`not_found`, `lease_lost`, …). */
  readonly code: string;
  /** The server's human sentence. */
  readonly detail: string;
  /** For `validation_error`: the offending fields. Empty otherwise. */
  readonly errors: FieldProblem[];
  readonly headers: Headers;

  constructor(status: number, code: string, detail: string, errors: FieldProblem[] = [], headers: Headers = new Headers()) {
    super(`${status} ${code}: ${detail}`);
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.errors = errors;
    this.headers = headers;
  }
}

export class ValidationError extends APIError {
  override name = "ValidationError";
}
export class AuthenticationError extends APIError {
  override name = "AuthenticationError";
}
export class PermissionDeniedError extends APIError {
  override name = "PermissionDeniedError";
}
export class NotFoundError extends APIError {
  override name = "NotFoundError";
}
export class LeaseLostError extends APIError {
  override name = "LeaseLostError";
}
export class InvalidStateError extends APIError {
  override name = "InvalidStateError";
}
export class DuplicateError extends APIError {
  override name = "DuplicateError";
  /** The job the `unique` rule met. */
  existingJobId: string | null = null;
  /** In a batch: the position of the item that met it. */
  index: number | null = null;
}
export class PayloadTooLargeError extends APIError {
  override name = "PayloadTooLargeError";
}
export class UnavailableError extends APIError {
  override name = "UnavailableError";
}

export class ConnectionError extends QueueFlowError {
  override name = "ConnectionError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

export class TimeoutError extends ConnectionError {
  override name = "TimeoutError";
}

/** `jobs.wait` / `jobs.run` / `workflows.wait`: the object had not finished when `timeoutMs` ran out. */
export class WaitTimeoutError extends QueueFlowError {
  override name = "WaitTimeoutError";
}

const BY_CODE: Record<string, typeof APIError> = {
  validation_error: ValidationError,
  unauthorized: AuthenticationError,
  forbidden: PermissionDeniedError,
  not_found: NotFoundError,
  lease_lost: LeaseLostError,
  invalid_state: InvalidStateError,
  duplicate: DuplicateError,
  payload_too_large: PayloadTooLargeError,
  unavailable: UnavailableError,
};

const BY_STATUS: Record<number, typeof APIError> = {
  400: ValidationError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  413: PayloadTooLargeError,
  503: UnavailableError,
};

/** The error for a non-2xx answer; `body` is the parsed problem, or whatever came back instead of one. */
export function apiError(response: Pick<Response, "status" | "statusText" | "headers">, body: unknown): APIError {
  const problem = isProblem(body) ? body : undefined;
  const code = problem?.code ?? codeForStatus(response.status);
  const detail = problem?.detail ?? (typeof body === "string" && body ? body : response.statusText);
  const Kind = BY_CODE[code] ?? BY_STATUS[response.status] ?? APIError;
  const error = new Kind(response.status, code, detail, problem?.errors ?? [], response.headers);
  if (error instanceof DuplicateError) {
    error.existingJobId = problem?.existing_job_id ?? null;
    error.index = problem?.index ?? null;
  }
  return error;
}

function codeForStatus(status: number): string {
  const Kind = BY_STATUS[status];
  const entry = Object.entries(BY_CODE).find(([, kind]) => kind === Kind);
  return entry ? entry[0] : status >= 500 ? "internal_error" : "http_error";
}

function isProblem(body: unknown): body is Problem {
  return typeof body === "object" && body !== null && typeof (body as { code?: unknown }).code === "string";
}
