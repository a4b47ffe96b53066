"""The queueflow schema: jobs, workflows, workflow_steps, schedules, and the work-notification trigger.

Plain SQL, no extensions (gen_random_uuid() is core since PostgreSQL 13). Ids are `COLLATE "C"` so that they
sort by code point, as the engine's cursors and the in-memory store do, whatever the database's collation.

Revision ID: 0001
Revises:
Create Date: 2026-03-01
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JOB_STATUSES = "'pending', 'running', 'retrying', 'completed', 'dead_letter', 'cancelled'"

UPGRADE = [
    "CREATE SCHEMA queueflow",
    # claim, heartbeat and finish all update the same row: page headroom (fillfactor) leaves room for the new
    # row versions, and the low vacuum threshold keeps the dead ones from piling up between autovacuum runs.
    f"""
    CREATE TABLE queueflow.jobs (
        id               TEXT COLLATE "C" PRIMARY KEY,
        tenant_id        TEXT NOT NULL,
        queue_name       TEXT NOT NULL,
        task_name        TEXT NOT NULL,
        payload          JSONB NOT NULL DEFAULT '{{}}',
        config           JSONB NOT NULL DEFAULT '{{}}',
        status           TEXT NOT NULL DEFAULT 'pending'
                         CONSTRAINT jobs_status_check CHECK (status IN ({JOB_STATUSES})),
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
        metadata         JSONB NOT NULL DEFAULT '{{}}',
        idempotency_key  TEXT,
        created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
        started_at       TIMESTAMPTZ,
        completed_at     TIMESTAMPTZ
    ) WITH (fillfactor = 85, autovacuum_vacuum_scale_factor = 0.05)
    """,
    "COMMENT ON COLUMN queueflow.jobs.config IS 'per-job policy that is not queried: {\"backoff\": {...}}'",
    # The hot dequeue path. Partial, so terminal history never slows a claim. It ends with `id`, the claim
    # order's final tie-break, so that a claim reads its rows off the index in order and stops after LIMIT
    # (without it, a backlog of 100,000 due rows is sorted on every claim: 70 ms instead of 0.05 ms).
    """
    CREATE INDEX idx_jobs_claim ON queueflow.jobs (queue_name, priority DESC, scheduled_at, created_at, id)
        WHERE status IN ('pending', 'retrying')
    """,
    # The janitor's expired-lease sweep.
    "CREATE INDEX idx_jobs_lease_expiry ON queueflow.jobs (locked_until) WHERE status = 'running'",
    # Idempotent enqueue: the key is scoped to the tenant; rows without a key (NULL) never conflict.
    "CREATE UNIQUE INDEX uq_jobs_tenant_idempotency_key ON queueflow.jobs (tenant_id, idempotency_key)",
    # A tenant's newest-first, keyset-paginated listing; it also serves every lookup by tenant.
    "CREATE INDEX idx_jobs_tenant_created ON queueflow.jobs (tenant_id, created_at DESC, id DESC)",
    # Retention's scan, instead of a plain index on status: measured, the planner preferred a plain status
    # index for the claim whenever few rows were due (and then sorted them all), and it is written on every
    # claim and ack. Nothing else looks jobs up by status alone.
    """
    CREATE INDEX idx_jobs_finished ON queueflow.jobs (completed_at)
        WHERE status IN ('completed', 'dead_letter', 'cancelled')
    """,
    "CREATE INDEX idx_jobs_queue_name ON queueflow.jobs (queue_name)",
    "CREATE INDEX idx_jobs_created_at ON queueflow.jobs (created_at DESC)",
    "CREATE INDEX idx_jobs_workflow ON queueflow.jobs (workflow_id) WHERE workflow_id IS NOT NULL",
    "CREATE INDEX idx_jobs_metadata ON queueflow.jobs USING gin (metadata jsonb_path_ops)",
    # One statement-level trigger, so a batch insert costs one trigger call; PostgreSQL also folds identical
    # notifications within a transaction, so a batch wakes each queue once.
    """
    CREATE FUNCTION queueflow.notify_work() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('queueflow_work', queue_name)
           FROM (SELECT DISTINCT queue_name FROM inserted WHERE status = 'pending') AS queues;
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER jobs_notify_work AFTER INSERT ON queueflow.jobs
        REFERENCING NEW TABLE AS inserted
        FOR EACH STATEMENT EXECUTE FUNCTION queueflow.notify_work()
    """,
    """
    CREATE TABLE queueflow.workflows (
        id              TEXT COLLATE "C" PRIMARY KEY,
        tenant_id       TEXT NOT NULL,
        name            TEXT NOT NULL,
        status          TEXT NOT NULL DEFAULT 'running' CONSTRAINT workflows_status_check
                        CHECK (status IN ('running', 'completed', 'failed', 'partially_failed', 'cancelled')),
        context         JSONB NOT NULL DEFAULT '{}',
        idempotency_key TEXT,
        created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
        completed_at    TIMESTAMPTZ
    )
    """,
    "CREATE UNIQUE INDEX uq_workflows_tenant_idempotency_key ON queueflow.workflows (tenant_id, idempotency_key)",
    "CREATE INDEX idx_workflows_tenant_created ON queueflow.workflows (tenant_id, created_at DESC, id DESC)",
    # The janitor's self-heal looks only at running workflows.
    "CREATE INDEX idx_workflows_running ON queueflow.workflows (updated_at) WHERE status = 'running'",
    """
    CREATE TABLE queueflow.workflow_steps (
        workflow_id     TEXT COLLATE "C" NOT NULL REFERENCES queueflow.workflows (id) ON DELETE CASCADE,
        name            TEXT NOT NULL,
        idx             INTEGER NOT NULL,
        task_name       TEXT NOT NULL,
        payload         JSONB NOT NULL DEFAULT '{}',
        depends_on      TEXT[] NOT NULL DEFAULT '{}',
        on_failure      TEXT NOT NULL DEFAULT 'halt' CONSTRAINT workflow_steps_on_failure_check
                        CHECK (on_failure IN ('halt', 'skip', 'continue')),
        status          TEXT NOT NULL DEFAULT 'pending' CONSTRAINT workflow_steps_status_check
                        CHECK (status IN ('pending', 'enqueued', 'completed', 'failed', 'skipped', 'cancelled')),
        job_id          TEXT COLLATE "C",
        queue_name      TEXT NOT NULL DEFAULT 'default',
        priority        INTEGER NOT NULL DEFAULT 0,
        max_retries     INTEGER NOT NULL DEFAULT 3,
        config          JSONB NOT NULL DEFAULT '{}',
        timeout_seconds DOUBLE PRECISION,
        PRIMARY KEY (workflow_id, name)
    )
    """,
    "CREATE INDEX idx_workflow_steps_job ON queueflow.workflow_steps (job_id) WHERE job_id IS NOT NULL",
    """
    CREATE TABLE queueflow.schedules (
        id          TEXT COLLATE "C" PRIMARY KEY,
        tenant_id   TEXT NOT NULL,
        name        TEXT NOT NULL,
        cron        TEXT NOT NULL,
        timezone    TEXT NOT NULL DEFAULT 'UTC',
        task_name   TEXT NOT NULL,
        queue_name  TEXT NOT NULL DEFAULT 'default',
        payload     JSONB NOT NULL DEFAULT '{}',
        priority    INTEGER NOT NULL DEFAULT 0,
        max_retries INTEGER NOT NULL DEFAULT 3,
        enabled     BOOLEAN NOT NULL DEFAULT true,
        next_run_at TIMESTAMPTZ,
        last_run_at TIMESTAMPTZ,
        created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
        CONSTRAINT uq_schedules_tenant_name UNIQUE (tenant_id, name)
    )
    """,
    # The cron scheduler's "what is due" scan.
    "CREATE INDEX idx_schedules_due ON queueflow.schedules (next_run_at) WHERE enabled",
]

DOWNGRADE = [
    "DROP TABLE queueflow.schedules",
    "DROP TABLE queueflow.workflow_steps",
    "DROP TABLE queueflow.workflows",
    "DROP TRIGGER jobs_notify_work ON queueflow.jobs",
    "DROP FUNCTION queueflow.notify_work()",
    "DROP TABLE queueflow.jobs",
    "DROP SCHEMA queueflow",
]


def run(statements: list[str]) -> None:
    # One statement per call: asyncpg refuses several in one string. exec_driver_sql, because op.execute
    # would read the ':' in SQL text as bind parameters.
    for sql in statements:
        if context.is_offline_mode():
            op.execute(sql)
        else:
            op.get_bind().exec_driver_sql(sql)


def upgrade() -> None:
    run(UPGRADE)


def downgrade() -> None:
    run(DOWNGRADE)
