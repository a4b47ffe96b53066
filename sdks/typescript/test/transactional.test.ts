/**
 * `enqueueTx` with node-postgres against a database migrated by the server (the pytest wrapper passes its URL in
 * QUEUEFLOW_TEST_PG_URL; run alone, without it, these tests skip).
 */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import pg from "pg";

import { enqueueTx, type Queryable } from "../src/index.js";

const url = process.env.QUEUEFLOW_TEST_PG_URL;
const skip = url ? false : "QUEUEFLOW_TEST_PG_URL is not set (the pytest wrapper sets it)";
let pool: pg.Pool;

before(() => {
  if (url) pool = new pg.Pool({ connectionString: url, max: 2 });
});
after(async () => {
  if (url) await pool.end();
});

async function stored(id: string): Promise<Record<string, unknown> | undefined> {
  const result = await pool.query(
    "SELECT tenant_id, task_name, payload, queue_name, priority, scheduled_at, max_retries, config, timeout_seconds," +
      " metadata, idempotency_key FROM queueflow.jobs WHERE id = $1",
    [id],
  );
  return result.rows[0];
}

test("a job enqueued in a committed transaction exists, with every option", { skip }, async () => {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const id = await enqueueTx(client, {
      tenant_id: "ts-acme",
      task_name: "send",
      payload: { to: "ada@example.com" },
      queue_name: "mail",
      priority: 9,
      run_at: new Date("2031-05-06T07:08:09Z"),
      max_retries: 1,
      backoff: { strategy: "linear", base_seconds: 2.5 },
      timeout_seconds: 12,
      metadata: { order: 42 },
      concurrency_key: "user-42",
    });
    assert.match(id, /^job_[0-9A-HJKMNP-TV-Z]{26}$/);
    await client.query("COMMIT");
    assert.deepEqual(await stored(id), {
      tenant_id: "ts-acme",
      task_name: "send",
      payload: { to: "ada@example.com" },
      queue_name: "mail",
      priority: 9,
      scheduled_at: new Date("2031-05-06T07:08:09Z"),
      max_retries: 1,
      // Where the server keeps a job's concurrency_key, so that a key_concurrency_limit holds this job too.
      config: {
        backoff: { strategy: "linear", base_seconds: 2.5, max_seconds: 3600.0, jitter: true },
        concurrency_key: "user-42",
      },
      timeout_seconds: 12,
      metadata: { order: 42 },
      idempotency_key: null,
    });
  } finally {
    client.release();
  }
});

test("a job enqueued in a rolled-back transaction never exists", { skip }, async () => {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const id = await enqueueTx(client, { tenant_id: "ts-acme", task_name: "send" });
    await client.query("ROLLBACK");
    assert.equal(await stored(id), undefined);
  } finally {
    client.release();
  }
});

test("a repeated idempotency key resolves to the original id (a Pool is a client too)", { skip }, async () => {
  const first = await enqueueTx(pool, { tenant_id: "ts-acme", task_name: "send", idempotency_key: "ts-order-7" });
  const again = await enqueueTx(pool, { tenant_id: "ts-acme", task_name: "other", idempotency_key: "ts-order-7" });
  assert.equal(again, first);
});

test("a bad value rejects with SQLSTATE 22023 naming the field", { skip }, async () => {
  await assert.rejects(enqueueTx(pool, { tenant_id: "ts-acme", task_name: "send", priority: 5000 }), (error: unknown) => {
    const failure = error as { code?: string; message: string };
    assert.equal(failure.code, "22023");
    assert.match(failure.message, /priority: must be between -1000 and 1000/);
    return true;
  });
});

test("a concurrency key out of bounds rejects with SQLSTATE 22023 naming concurrency_key", { skip }, async () => {
  for (const concurrency_key of ["", "k".repeat(201)]) {
    const rejected = enqueueTx(pool, { tenant_id: "ts-acme", task_name: "send", concurrency_key });
    await assert.rejects(rejected, (error: unknown) => {
      const failure = error as { code?: string; column?: string; message: string };
      assert.equal(failure.code, "22023");
      assert.equal(failure.column, "concurrency_key");
      assert.match(failure.message, /concurrency_key: must be 1–200 characters long/);
      return true;
    });
  }
});

test("a deadline is stored, as a time or as seconds from the database's now", { skip }, async () => {
  const at = new Date("2031-05-06T07:08:09Z");
  const byTime = await enqueueTx(pool, { tenant_id: "ts-acme", task_name: "offer", expires_at: at });
  const bySeconds = await enqueueTx(pool, { tenant_id: "ts-acme", task_name: "offer", expires_in_seconds: 90 });
  const rows = await pool.query(
    "SELECT id, expires_at, extract(epoch FROM expires_at - created_at) AS ahead FROM queueflow.jobs WHERE id = ANY($1)",
    [[byTime, bySeconds]],
  );
  const byId = new Map(rows.rows.map((row) => [row.id as string, row]));
  assert.equal((byId.get(byTime)!.expires_at as Date).toISOString(), at.toISOString());
  const ahead = Number(byId.get(bySeconds)!.ahead);
  assert.ok(ahead > 89.9 && ahead <= 90, String(ahead));
  await assert.rejects(
    enqueueTx(pool, { tenant_id: "ts-acme", task_name: "offer", delay_seconds: 60, expires_in_seconds: 30 }),
    (error: unknown) => (error as { code?: string; column?: string }).column === "expires_at",
  );
});

test("both forms of a deadline are refused before anything is sent", async () => {
  const nothing: Queryable = {
    query: () => Promise.reject(new Error("sent")),
  };
  await assert.rejects(
    enqueueTx(nothing, { tenant_id: "t", task_name: "offer", expires_at: "2031-01-01T00:00:00Z", expires_in_seconds: 5 }),
    /expires_in_seconds cannot be combined with expires_at/,
  );
});
