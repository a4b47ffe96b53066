-- Raw ceiling: one 100-row INSERT, QueueFlow's batch insert (stores/postgres/sql.py insert_sql) with its trigger and RETURNING.
-- pgbench cannot bind arrays, so the rows come from generate_series inside the statement instead of unnest($n);
-- PostgreSQL still builds, checks, indexes, notifies and returns every row as it does for QueueFlow's.
INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, payload, config, priority, scheduled_at,
                            max_retries, timeout_seconds, metadata, idempotency_key, created_at, workflow_id,
                            workflow_step_id)
SELECT 'job_' || gen_random_uuid(), 'bench', 'raw_insert', 'noop', jsonb_build_object('i', n),
       '{"backoff": {"strategy": "exponential", "base_seconds": 1, "max_seconds": 3600, "jitter": true}}'::jsonb,
       0, now(), 3, NULL::float8, '{}'::jsonb, NULL::text, now(), NULL::text, NULL::text
  FROM generate_series(1, 100) AS n
ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id, tenant_id, queue_name, task_name, payload, config, status, priority, scheduled_at, locked_until,
          lease_token, delivery_count, retry_count, max_retries, timeout_seconds, next_retry_at, workflow_id,
          workflow_step_id, result, error_message, metadata, idempotency_key, created_at, started_at, completed_at;
