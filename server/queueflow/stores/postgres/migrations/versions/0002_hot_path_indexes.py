"""Indexes for the hot path: fewer entries written per claim and per completion, and the next due time cheap.

A claim and a completion change `status`, which the partial indexes' predicates read, so neither update is
HOT: each writes a new entry into every index whose predicate the new row version satisfies. This revision
drops the two indexes no statement used (`queue_name` alone, `created_at` alone) and makes two partial, so that
the common job (no idempotency key, no metadata) writes nothing into them: the unique idempotency index (ON
CONFLICT names the same predicate) and the metadata GIN index (a listing filtered on non-empty metadata adds the
predicate). It adds `idx_jobs_due`, which a parked long-poll reads to sleep exactly until the next delayed job or
retry becomes due; it gains an entry only when a row becomes pending or retrying.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    "DROP INDEX queueflow.idx_jobs_queue_name",
    "DROP INDEX queueflow.idx_jobs_created_at",
    "DROP INDEX queueflow.uq_jobs_tenant_idempotency_key",
    """
    CREATE UNIQUE INDEX uq_jobs_tenant_idempotency_key ON queueflow.jobs (tenant_id, idempotency_key)
        WHERE idempotency_key IS NOT NULL
    """,
    "DROP INDEX queueflow.idx_jobs_metadata",
    "CREATE INDEX idx_jobs_metadata ON queueflow.jobs USING gin (metadata jsonb_path_ops) WHERE metadata <> '{}'",
    "CREATE INDEX idx_jobs_due ON queueflow.jobs (queue_name, scheduled_at) WHERE status IN ('pending', 'retrying')",
]

DOWNGRADE = [
    "DROP INDEX queueflow.idx_jobs_due",
    "DROP INDEX queueflow.idx_jobs_metadata",
    "CREATE INDEX idx_jobs_metadata ON queueflow.jobs USING gin (metadata jsonb_path_ops)",
    "DROP INDEX queueflow.uq_jobs_tenant_idempotency_key",
    "CREATE UNIQUE INDEX uq_jobs_tenant_idempotency_key ON queueflow.jobs (tenant_id, idempotency_key)",
    "CREATE INDEX idx_jobs_created_at ON queueflow.jobs (created_at DESC)",
    "CREATE INDEX idx_jobs_queue_name ON queueflow.jobs (queue_name)",
]


def run(statements: list[str]) -> None:
    # As in 0001: one statement per call, through the driver (no bind-parameter parsing of the SQL text).
    for sql in statements:
        if context.is_offline_mode():
            op.execute(sql)
        else:
            op.get_bind().exec_driver_sql(sql)


def upgrade() -> None:
    run(UPGRADE)


def downgrade() -> None:
    run(DOWNGRADE)
