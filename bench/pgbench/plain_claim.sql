-- The plain-claim ceiling's claim: the seed's (stores/postgres.py CLAIM at commit a74e114: one UPDATE of the first
-- :batch due rows in claim order, FOR UPDATE SKIP LOCKED, no tenants, no turn) on the seed's table and claim index
-- (plain_schema.sql), then the seed's completion (its COMPLETE, one UPDATE … FROM unnest for the batch).
-- bench/scenarios/raw.py puts the claim in place of claim_complete.sql's {claim} line and the completion (after the
-- line `-- complete`) in place of {complete}. RETURNING * is the seed's every column, as its RETURNING {COLUMNS}
-- was; the completion returns the seed's J_COLUMNS. One queue, `queue_name = 'raw'` where the seed had `= ANY($1)`: on
-- PostgreSQL 15 an index scan under `= ANY(array)` returns no order, so the seed's claim sorted the whole backlog
-- on every claim even of one queue (a sequential scan and a sort of 20,000 rows per claim of 100: 50 ms, measured);
-- the ceiling is the plain claim at its best.
WITH claimed AS (
UPDATE plain.jobs
   SET status = 'running',
       lease_token = gen_random_uuid(),
       delivery_count = delivery_count + 1,
       started_at = now(),
       locked_until = LEAST(now() + '30 seconds'::interval, now() + make_interval(secs => timeout_seconds))
 WHERE id IN (SELECT id FROM plain.jobs
               WHERE queue_name = 'raw' AND status IN ('pending', 'retrying')
                 AND scheduled_at <= now()
               ORDER BY priority DESC, scheduled_at, created_at, id
               LIMIT :batch
               FOR UPDATE SKIP LOCKED)
RETURNING *)
-- complete
UPDATE plain.jobs AS j
   SET status = 'completed', result = c.result, completed_at = now(), lease_token = NULL, locked_until = NULL
  FROM unnest(:ids::text[], :tokens::uuid[],
              array_fill('{"ok": true}'::jsonb, ARRAY[cardinality(:ids::text[])])) AS c(id, lease_token, result)
 WHERE j.id = c.id AND j.status = 'running' AND j.lease_token = c.lease_token AND j.locked_until > now()
RETURNING j.*, c.lease_token AS held_token;
