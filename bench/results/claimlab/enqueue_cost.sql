-- Buffers an enqueue of 100 jobs touches: today (jobs with idx_jobs_claim) against the ready split (jobs without the
-- claim index, plus the narrow ready row with its claim index and id index). Each in a transaction rolled back.
\set rows 'SELECT ''e_'' || i, ''t'' || (i % 4), ''q'', ''task'', (''{"blob": "'' || repeat(''x'', 240) || ''"}'')::jsonb, now(), now() FROM generate_series(1, 100) AS i'
BEGIN;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, payload, scheduled_at, created_at) :rows;
ROLLBACK;
BEGIN;
DROP INDEX queueflow.idx_jobs_claim;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, payload, scheduled_at, created_at) :rows;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
INSERT INTO lab.ready SELECT id, queue_name, tenant_id, task_name, priority, scheduled_at, created_at
  FROM queueflow.jobs WHERE id LIKE 'e\_%';
ROLLBACK;
