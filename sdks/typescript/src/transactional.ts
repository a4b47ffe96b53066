/**
 * `enqueueTx`: enqueue inside your own database transaction, through the `pg` (node-postgres) client you hold.
 *
 * ```ts
 * const client = await pool.connect();
 * await client.query("BEGIN");
 * await client.query("INSERT INTO orders (id) VALUES ($1)", [42]);
 * const jobId = await enqueueTx(client, { tenant_id: "acme", task_name: "send_receipt", payload: { order: 42 } });
 * await client.query("COMMIT"); // the job exists, and workers wake, only now
 * ```
 *
 * It calls `queueflow.enqueue(...)`, the SQL function the server's migrations install (README.md, "Enqueue in your
 * own transaction"): the same validation, ids and idempotency as `POST /v1/jobs`. `pg` is not a dependency of
 * this package: anything with pg's `query(text, values)` will do. A rejected value rejects with pg's error
 * (`code` "22023", the message naming every bad field), which aborts the transaction as any failed statement does.
 */

import type { Backoff, Sequence, Unique } from "./types.js";

/** What `enqueueTx` needs of a client: `pg`'s `Client`, `PoolClient` and `Pool` all have it. */
export interface Queryable {
  query(text: string, values: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
}

/** A job for `queueflow.enqueue(...)`: the fields of `POST /v1/jobs` (`concurrency_key` too) and the tenant. */
export interface TransactionalJob {
  tenant_id: string;
  task_name: string;
  payload?: Record<string, unknown>;
  queue_name?: string;
  priority?: number;
  run_at?: Date | string;
  delay_seconds?: number;
  max_retries?: number;
  backoff?: Partial<Backoff>;
  timeout_seconds?: number;
  metadata?: Record<string, unknown>;
  idempotency_key?: string;
  concurrency_key?: string;
  /** Sent as the function's `unique_rule` (`unique` is a reserved word in SQL). */
  unique?: Unique;
  /** Not started by then, the job is never started: it is dead-lettered ("expired: not started by …"). */
  expires_at?: Date | string;
  /** `expires_at` as seconds from now, by the database's clock (not with `expires_at`). */
  expires_in_seconds?: number;
  /** Run after every earlier job of its key, one at a time (`{ key, on_failure }`). */
  sequence?: Sequence;
}

const TYPES: Record<keyof TransactionalJob, string> = {
  tenant_id: "text",
  task_name: "text",
  payload: "jsonb",
  queue_name: "text",
  priority: "integer",
  run_at: "timestamptz",
  delay_seconds: "double precision",
  max_retries: "integer",
  backoff: "jsonb",
  timeout_seconds: "double precision",
  metadata: "jsonb",
  idempotency_key: "text",
  concurrency_key: "text",
  unique: "jsonb",
  expires_at: "timestamptz",
  expires_in_seconds: "double precision",
  sequence: "jsonb",
};
/** A field whose SQL parameter is named otherwise. */
const SQL_NAMES: Partial<Record<keyof TransactionalJob, string>> = { unique: "unique_rule" };
/** A field the function takes as another parameter, computed in the database (`$` is the value's placeholder). */
const SQL_EXPRESSIONS: Partial<Record<keyof TransactionalJob, string>> = {
  expires_in_seconds: "expires_at => clock_timestamp() + make_interval(secs => $)",
};

/** Enqueue `job` in `client`'s current transaction; resolves to the job's id (the original one for a repeated key). */
export async function enqueueTx(client: Queryable, job: TransactionalJob): Promise<string> {
  if (job.expires_at !== undefined && job.expires_in_seconds !== undefined) {
    throw new TypeError("expires_in_seconds cannot be combined with expires_at");
  }
  const names: string[] = [];
  const values: unknown[] = [];
  for (const [name, type] of Object.entries(TYPES) as Array<[keyof TransactionalJob, string]>) {
    const value = job[name];
    if (value === undefined) continue; // the function's default applies
    const placeholder = `$${values.length + 1}::${type}`;
    const expression = SQL_EXPRESSIONS[name];
    names.push(expression ? expression.replace("$", placeholder) : `${SQL_NAMES[name] ?? name} => ${placeholder}`);
    if (type === "jsonb") values.push(JSON.stringify(value));
    else if (value instanceof Date) values.push(value.toISOString());
    else values.push(value);
  }
  const result = await client.query(`SELECT queueflow.enqueue(${names.join(", ")}) AS id`, values);
  const id = result.rows[0]?.id;
  if (typeof id !== "string") throw new Error("queueflow.enqueue returned no id");
  return id;
}
