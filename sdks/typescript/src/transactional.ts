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

import type { Backoff, Unique } from "./types.js";

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
};
/** A field whose SQL parameter is named otherwise. */
const SQL_NAMES: Partial<Record<keyof TransactionalJob, string>> = { unique: "unique_rule" };

/** Enqueue `job` in `client`'s current transaction; resolves to the job's id (the original one for a repeated key). */
export async function enqueueTx(client: Queryable, job: TransactionalJob): Promise<string> {
  const names: string[] = [];
  const values: unknown[] = [];
  for (const [name, type] of Object.entries(TYPES) as Array<[keyof TransactionalJob, string]>) {
    const value = job[name];
    if (value === undefined) continue; // the function's default applies
    names.push(`${SQL_NAMES[name] ?? name} => $${values.length + 1}::${type}`);
    if (type === "jsonb") values.push(JSON.stringify(value));
    else if (value instanceof Date) values.push(value.toISOString());
    else values.push(value);
  }
  const result = await client.query(`SELECT queueflow.enqueue(${names.join(", ")}) AS id`, values);
  const id = result.rows[0]?.id;
  if (typeof id !== "string") throw new Error("queueflow.enqueue returned no id");
  return id;
}
