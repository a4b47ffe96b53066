-- The plain claim's table: the seed's queueflow.jobs (migration 0001 as first written, commit a74e114, kept here
-- as it was, whatever the migrations become) with its claim index (below) and nothing else, in a schema of its own
-- (`plain`) beside QueueFlow's, so that both ceilings run in one database on one PostgreSQL in one run: the ceiling
-- of a claim that pays for no index, trigger or fairness but the one it reads. (With the seed's other indexes — on
-- status, queue_name, created_at, a full GIN on metadata, which every claim's non-HOT update also writes — the
-- plain claim ran at 0.6-0.9 of the store's claim, measured: no ceiling.) Its work-notification trigger is left
-- out: it fires on INSERT only, and the drains insert nothing.
CREATE SCHEMA plain;
CREATE TABLE plain.jobs (
    id               TEXT COLLATE "C" PRIMARY KEY,
    tenant_id        TEXT NOT NULL,
    queue_name       TEXT NOT NULL,
    task_name        TEXT NOT NULL,
    payload          JSONB NOT NULL DEFAULT '{}',
    config           JSONB NOT NULL DEFAULT '{}',
    status           TEXT NOT NULL DEFAULT 'pending'
                     CONSTRAINT jobs_status_check
                     CHECK (status IN ('pending', 'running', 'retrying', 'completed', 'dead_letter', 'cancelled')),
    priority         INTEGER NOT NULL DEFAULT 0,
    scheduled_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    locked_until     TIMESTAMPTZ,
    lease_token      UUID,
    delivery_count   INTEGER NOT NULL DEFAULT 0,
    retry_count      INTEGER NOT NULL DEFAULT 0,
    max_retries      INTEGER NOT NULL DEFAULT 3,
    timeout_seconds  DOUBLE PRECISION,
    next_retry_at    TIMESTAMPTZ,
    workflow_id      TEXT COLLATE "C",
    workflow_step_id TEXT,
    result           JSONB,
    error_message    TEXT,
    metadata         JSONB NOT NULL DEFAULT '{}',
    idempotency_key  TEXT,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    started_at       TIMESTAMPTZ,
    completed_at     TIMESTAMPTZ
) WITH (fillfactor = 85, autovacuum_vacuum_scale_factor = 0.05);
-- The seed's claim index, with `id` at its end: the seed's claim orders by id last, which its index lacked, so
-- that on a backlog written in one statement (one created_at) each claim sorted every row of that one key.
CREATE INDEX idx_jobs_claim ON plain.jobs (queue_name, priority DESC, scheduled_at, created_at, id)
    WHERE status IN ('pending', 'retrying');
