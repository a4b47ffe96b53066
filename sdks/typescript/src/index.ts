/** `@queueflow/client`: a typed client and worker for QueueFlow's HTTP API. */

export { QueueFlow, Jobs, Queues, Sequences } from "./client.js";
export { Workflows } from "./workflows.js";
export { Schedules } from "./schedules.js";
export { Endpoints } from "./endpoints.js";
export { verifySignature, SIGNATURE_HEADER } from "./signatures.js";
export type { VerifyOptions } from "./signatures.js";
export { Events, Triggers } from "./triggers.js";
export type { SendEventOptions } from "./triggers.js";
export { steps } from "./steps.js";
export type { NewStep, OnFailure, SignalStepOptions, StepOptions, StepRef, TaskStepOptions, Wait, WorkflowDefinition } from "./steps.js";
export { paginate } from "./pagination.js";
export { VERSION } from "./version.js";
export { enqueueTx } from "./transactional.js";
export type { Queryable, TransactionalJob } from "./transactional.js";
export type { QueueFlowOptions, EnqueueOptions } from "./client.js";
export type { CreateWorkflowOptions } from "./workflows.js";
export { Worker, RetryError, FatalError, ShutdownError, DeadlineError } from "./worker.js";
export type { WorkerOptions, WorkerLogger, TaskContext, TaskHandler } from "./worker.js";
export { LocalLease } from "./worker/context.js";
export { defineTask, TaskDefinition } from "./tasks.js";
export type { TypedJob, JobFields } from "./tasks.js";
export type { RequestOptions } from "./transport.js";
export {
  QueueFlowError,
  ArgumentError,
  SignatureVerificationError,
  APIError,
  ValidationError,
  AuthenticationError,
  PermissionDeniedError,
  NotFoundError,
  LeaseLostError,
  InvalidStateError,
  DuplicateError,
  PayloadTooLargeError,
  UnavailableError,
  ConnectionError,
  TimeoutError,
  WaitTimeoutError,
} from "./errors.js";
export type { WaitOptions } from "./waiting.js";
export type { Problem, FieldProblem, ProblemCode } from "./errors.js";
export type * from "./types.js";
export type { paths, components, operations } from "./generated/schema.js";
