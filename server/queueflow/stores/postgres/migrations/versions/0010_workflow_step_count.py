"""A workflow counts its steps (issue 31: adding steps costs what it adds, not what the workflow holds).

`workflows.steps`: how many steps the workflow holds, written at its creation and by each addition of steps, which
reads it (for the step limit, and as the new steps' `idx`) instead of counting the workflow's rows. NULL for a
workflow made by a server of an earlier revision: the first addition counts its rows once and writes it.

Expand-only: a nullable column without a default, which a server of revision 0009 never writes nor reads.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = ["ALTER TABLE queueflow.workflows ADD COLUMN steps INTEGER"]

DOWNGRADE = ["ALTER TABLE queueflow.workflows DROP COLUMN steps"]


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
