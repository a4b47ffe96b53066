"""Fair leasing across tenants: the claim index leads with the tenant (README.md, "Fairness"); idx_jobs_due
holds only delayed jobs.

A claim serves the tenants with due jobs in turn, so it finds them first: a skip scan of `idx_jobs_claim`, one index
descent per tenant (`tenant_id > previous ORDER BY tenant_id LIMIT 1`), then each tenant's jobs in claim order
(priority desc, scheduled_at, created_at, id) off the same index. With `tenant_id` second, both are index reads
that stop after what they need, however large one tenant's backlog is; a tenant-scoped worker key's claim reads
its tenant's range alone instead of filtering the queue's rows. The index has the same rows as before (pending and
retrying), so a claim and a completion write the same number of index entries.

`idx_jobs_due` (0002) now holds only the jobs that were not due when written (`scheduled_at > created_at`: a delay,
a `run_at` ahead, a retry's backoff), which is all its one reader, NEXT_DUE, asks for: an immediate job is due at
once, so it is never the next one to become due. Two gains. The claim's per-tenant probes can no longer be planned
on it: before, with statistics that lagged a burst of inserts, the planner took it for them (its predicate matched
theirs), and each probe read and sorted every pending row of the queue, 2 s per lease with 100 tenants × 100 jobs;
its predicate now names a condition no claim states. And an immediate job, the common one, writes no entry into it
on enqueue, claim or completion.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DUE = "CREATE INDEX idx_jobs_due ON queueflow.jobs (queue_name, scheduled_at) WHERE status IN ('pending', 'retrying')"

UPGRADE = [
    "DROP INDEX queueflow.idx_jobs_claim",
    """
    CREATE INDEX idx_jobs_claim ON queueflow.jobs (queue_name, tenant_id, priority DESC, scheduled_at, created_at, id)
        WHERE status IN ('pending', 'retrying')
    """,
    "DROP INDEX queueflow.idx_jobs_due",
    f"{DUE} AND scheduled_at > created_at",
]

DOWNGRADE = [
    "DROP INDEX queueflow.idx_jobs_due",
    DUE,
    "DROP INDEX queueflow.idx_jobs_claim",
    """
    CREATE INDEX idx_jobs_claim ON queueflow.jobs (queue_name, priority DESC, scheduled_at, created_at, id)
        WHERE status IN ('pending', 'retrying')
    """,
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
