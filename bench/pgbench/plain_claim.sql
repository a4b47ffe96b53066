-- The plain-claim ceiling's claim: the seed's (stores/postgres.py CLAIM at commit a74e114: one UPDATE of the first
-- :batch due rows in claim order, FOR UPDATE SKIP LOCKED, no tenants, no turn) on the seed's table and claim index
-- (plain_schema.sql). bench/scenarios/raw.py puts it in place of claim_complete.sql's {claim} line, with that
-- script's completion on plain.jobs, so that both ceilings complete the same way. RETURNING * is the seed's every
-- column, as its RETURNING {COLUMNS} was.
WITH claimed AS (
UPDATE plain.jobs
   SET status = 'running',
       lease_token = gen_random_uuid(),
       delivery_count = delivery_count + 1,
       started_at = now(),
       locked_until = LEAST(now() + '30 seconds'::interval, now() + make_interval(secs => timeout_seconds))
 WHERE id IN (SELECT id FROM plain.jobs
               WHERE queue_name = ANY(ARRAY['raw']::text[]) AND status IN ('pending', 'retrying')
                 AND scheduled_at <= now()
               ORDER BY priority DESC, scheduled_at, created_at, id
               LIMIT :batch
               FOR UPDATE SKIP LOCKED)
RETURNING *)
