-- Raw ceiling: claim :batch jobs, then complete them, as QueueFlow's store does (stores/postgres/sql.py CLAIM and COMPLETE).
-- Run by pgbench -M prepared (asyncpg prepares every statement too), with -D batch=1 or -D batch=100.
-- The claim is not written here: bench/scenarios/raw.py puts QueueFlow's own CLAIM in place of the line {claim},
-- so that the ceiling always runs the statement the store runs (one tenant: one statement, as in the store).
-- Differences, each for pgbench's sake: now() and a constant lease instead of bound parameters; the claim is
-- wrapped in a CTE so that \gset gets one row (the claimed ids and tokens as arrays, for the completion), and
-- array_agg(claimed)::text still makes PostgreSQL produce and send every returned column, as RETURNING does.
-- The store's claim commits asynchronously (stores/postgres/sql.py ASYNC_COMMIT), its completion synchronously: the
-- same here, by the session's setting around the claim (the store sets it in the claim's own transaction).
SET synchronous_commit = off;
{claim}
SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(lease_token), '{}') AS tokens,
       array_agg(claimed)::text AS claimed_rows
  FROM claimed
\gset
SET synchronous_commit = on;
-- One statement for the whole batch: UPDATE … FROM unnest(ids, tokens, results).
UPDATE queueflow.jobs AS j
   SET status = 'completed', result = c.result, completed_at = now(), lease_token = NULL, locked_until = NULL
  FROM unnest(:ids::text[], :tokens::uuid[],
              array_fill('{"ok": true}'::jsonb, ARRAY[cardinality(:ids::text[])])) AS c(id, lease_token, result)
 WHERE j.id = c.id AND j.status = 'running' AND j.lease_token = c.lease_token AND j.locked_until > now()
RETURNING j.id, j.tenant_id, j.queue_name, j.task_name, j.payload, j.config, j.status, j.priority, j.scheduled_at,
          j.locked_until, j.lease_token, j.delivery_count, j.retry_count, j.max_retries, j.timeout_seconds,
          j.next_retry_at, j.workflow_id, j.workflow_step_id, j.result, j.error_message, j.metadata,
          j.idempotency_key, j.created_at, j.started_at, j.completed_at, c.lease_token AS held_token;
