"""Retention per queue (issue 42): `queue_settings.retention_seconds`, and `idx_jobs_finished` keyed by queue.

- `queue_settings.retention_seconds`: how long the tenant's queue keeps its finished jobs (60 s to ten years);
  NULL: the server's `--retention-hours`, or keep. Nullable and outside idx_queue_settings_restricting's predicate:
  a queue with only a retention is not restricted, and the claim never reads the column.
- `idx_jobs_finished` was (completed_at): one range over every queue's history, which a per-queue cutoff could
  only filter. It is now (tenant_id, queue_name, completed_at) over the same rows, so retention reads one range
  per (tenant, queue) — only that queue's expired rows — and finds the queues by a skip scan of the same index
  (one descent each). The queue's throughput chart reads it the same way. Same rows, so a completion writes as
  many index entries as before.

Expand-only for a server of revision 0015 or 0016: it never writes the column, and its retention (a range on
completed_at with a status filter) still reads the new index, less well, until the new server runs. The index is
built inside the migration's transaction, as 0005 built idx_jobs_claim: writes to `jobs` wait for the build.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-07
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FINISHED = "WHERE status IN ('completed', 'dead_letter', 'cancelled')"

UPGRADE = [
    """
    ALTER TABLE queueflow.queue_settings ADD COLUMN retention_seconds INTEGER
        CONSTRAINT queue_settings_retention_seconds_check CHECK (retention_seconds BETWEEN 60 AND 315360000)
    """,
    "DROP INDEX queueflow.idx_jobs_finished",
    f"CREATE INDEX idx_jobs_finished ON queueflow.jobs (tenant_id, queue_name, completed_at) {FINISHED}",
]

DOWNGRADE = [
    "DROP INDEX queueflow.idx_jobs_finished",
    f"CREATE INDEX idx_jobs_finished ON queueflow.jobs (completed_at) {FINISHED}",
    "ALTER TABLE queueflow.queue_settings DROP COLUMN retention_seconds",
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
