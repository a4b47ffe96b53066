"""Concurrency keys take turns within a tenant (README.md, "Fairness"): where each key-limited queue's turn goes on,
and an index to find a queue's keys.

`queue_settings.key_turn` is the key a lease of that (tenant, queue) served last ('' for its jobs without a key):
the next lease starts after it. It lives in the settings row because every lease of a key-limited queue already
locks that row (the restricted claim): the turn is then one for all server processes, and exact.

`idx_jobs_keyed` holds only pending and retrying jobs that have a concurrency key, so a job without one, the
common one, writes no entry into it. The claim finds a queue's keys by a skip scan of it (`key > previous ORDER BY
key LIMIT 1`, one index descent per key, in code-point order: `COLLATE "C"`, the order the turn takes), then each
key's jobs in claim order off the same index.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    "ALTER TABLE queueflow.queue_settings ADD COLUMN key_turn text",
    """
    CREATE INDEX idx_jobs_keyed ON queueflow.jobs
        (queue_name, tenant_id, ((config->>'concurrency_key') COLLATE "C"), priority DESC, scheduled_at, created_at, id)
        WHERE status IN ('pending', 'retrying') AND config ? 'concurrency_key'
    """,
]

DOWNGRADE = [
    "DROP INDEX queueflow.idx_jobs_keyed",
    "ALTER TABLE queueflow.queue_settings DROP COLUMN key_turn",
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
