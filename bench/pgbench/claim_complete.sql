-- Raw ceiling: claim :batch jobs, then complete them, as QueueFlow's store does (stores/postgres/sql.py CLAIM and COMPLETE).
-- Run by pgbench -M prepared (asyncpg prepares every statement too), with -D batch=1 or -D batch=100.
-- Differences, each for pgbench's sake: now() and a constant lease instead of bound parameters; the claim is
-- wrapped in a CTE so that \gset gets one row (the claimed ids and tokens as arrays, for the completion), and
-- array_agg(claimed)::text still makes PostgreSQL produce and send every returned column, as RETURNING does.
WITH claimed AS (
UPDATE queueflow.jobs
   SET status = 'running',
       lease_token = gen_random_uuid(),
       delivery_count = delivery_count + 1,
       started_at = now(),
       locked_until = LEAST(now() + '30 seconds'::interval, now() + make_interval(secs => timeout_seconds))
 WHERE id = ANY(ARRAY(
       SELECT due.id
         FROM (SELECT q.name FROM unnest(ARRAY['raw']::text[]) AS q(name)
                WHERE NOT EXISTS (SELECT FROM queueflow.queue_settings AS s
                                   WHERE s.queue_name = q.name
                                     AND (paused OR concurrency_limit IS NOT NULL OR key_concurrency_limit IS NOT NULL
                                          OR rate_jobs IS NOT NULL))
               OFFSET 0) AS queue,
              LATERAL (SELECT id, priority, scheduled_at, created_at FROM queueflow.jobs
                        WHERE queue_name = queue.name AND status IN ('pending', 'retrying') AND scheduled_at <= now()
                        ORDER BY priority DESC, scheduled_at, created_at, id
                        LIMIT :batch
                        FOR UPDATE SKIP LOCKED) AS due
        ORDER BY due.priority DESC, due.scheduled_at, due.created_at, due.id
        LIMIT :batch))
RETURNING id, tenant_id, queue_name, task_name, payload, config, status, priority, scheduled_at, locked_until,
          lease_token, delivery_count, retry_count, max_retries, timeout_seconds, next_retry_at, workflow_id,
          workflow_step_id, result, error_message, metadata, idempotency_key, created_at, started_at, completed_at)
SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(lease_token), '{}') AS tokens,
       array_agg(claimed)::text AS claimed_rows
  FROM claimed
\gset
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
