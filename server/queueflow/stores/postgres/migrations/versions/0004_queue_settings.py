"""Flow control: one row of settings per tenant and queue (API.md, "Flow control").

A queue nobody configured has no row, and a claim on it reads nothing but `idx_queue_settings_restricting`, a
partial index that holds only rows that restrict leasing (paused, or with a limit): the probe that keeps the
claim of an unconfigured queue what it was. The rate limit's token bucket lives in the row too
(`rate_tokens` as of `rate_refilled_at`), so it is read and spent under the same row lock as the limits.

Revision ID: 0004
Revises: 0002 (re-chained onto 0003 at merge)
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0004"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    """
    CREATE TABLE queueflow.queue_settings (
        tenant_id              text        NOT NULL,
        queue_name             text        NOT NULL,
        paused                 boolean     NOT NULL DEFAULT false,
        concurrency_limit      integer     CHECK (concurrency_limit BETWEEN 1 AND 100000),
        key_concurrency_limit  integer     CHECK (key_concurrency_limit BETWEEN 1 AND 100000),
        rate_jobs              integer     CHECK (rate_jobs BETWEEN 1 AND 100000),
        rate_per_seconds       float8      CHECK (rate_per_seconds BETWEEN 0.001 AND 86400),
        rate_tokens            float8,
        rate_refilled_at       timestamptz,
        updated_at             timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, queue_name),
        CHECK ((rate_jobs IS NULL) = (rate_per_seconds IS NULL))
    )
    """,
    """
    CREATE INDEX idx_queue_settings_restricting ON queueflow.queue_settings (queue_name, tenant_id)
        WHERE paused OR concurrency_limit IS NOT NULL OR key_concurrency_limit IS NOT NULL OR rate_jobs IS NOT NULL
    """,
]

DOWNGRADE = ["DROP TABLE queueflow.queue_settings"]


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
