"""The job list's index ascending (issue 42, bytes per finished job): idx_jobs_tenant_created is rebuilt as
(tenant_id, created_at, id), from (tenant_id, created_at DESC, id DESC).

Every job's entry goes in at its tenant's newest end. Descending, that end is the left of the tenant's range, and a
B-tree leaf that fills there splits in halves whose left half takes the next entries: the right half never fills
again, so the index held about twice its entries' bytes. Ascending, the newest end is the right of the range, where a
split leaves the full page behind (the rightmost page's fillfactor split, or the split after a new item that follows
its neighbour for a tenant's range inside the index). The list (`ORDER BY created_at DESC, id DESC`, its cursor
`(created_at, id) < (...)`) reads the same index backward, the same entries in the same order.

With 100,000 finished jobs (bench/results/2026-12-07-bytes-per-job.md) it was the table's second-largest index.

The index is built inside the migration's transaction, as 0017 built idx_jobs_finished: writes to `jobs` wait for
the build. On a large table, build it first without blocking writes,
`CREATE INDEX CONCURRENTLY idx_jobs_tenant_created_asc ON queueflow.jobs (tenant_id, created_at, id)`, and the
migration takes it as built (an invalid one, from a build that failed, is dropped and built again here); dropping
the old index and renaming the new one each hold their lock for an instant.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    """
    DO $$
    BEGIN
        IF EXISTS (SELECT FROM pg_index WHERE indexrelid = to_regclass('queueflow.idx_jobs_tenant_created_asc')
                                         AND NOT indisvalid) THEN
            DROP INDEX queueflow.idx_jobs_tenant_created_asc;
        END IF;
    END $$
    """,
    "CREATE INDEX IF NOT EXISTS idx_jobs_tenant_created_asc ON queueflow.jobs (tenant_id, created_at, id)",
    "DROP INDEX queueflow.idx_jobs_tenant_created",
    "ALTER INDEX queueflow.idx_jobs_tenant_created_asc RENAME TO idx_jobs_tenant_created",
]

DOWNGRADE = [
    "DROP INDEX queueflow.idx_jobs_tenant_created",
    "CREATE INDEX idx_jobs_tenant_created ON queueflow.jobs (tenant_id, created_at DESC, id DESC)",
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
