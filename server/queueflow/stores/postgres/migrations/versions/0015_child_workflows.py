"""Workflows that nest and end on time (issue 44): child-workflow steps and a workflow's deadline.

Expand-only: nullable columns (or with a constant default, which PostgreSQL 11+ adds without a rewrite) and new
partial indexes, so a server of revision 0014 keeps working on this schema (it never writes the new columns, and
never meets a child step unless a newer server made one).

- `workflow_steps.child`: a child step's workflow body (as `POST /v1/workflows` takes it), NULL otherwise;
  `child_workflow_id`, the child it created (kept through a retry, which retries that child in place); `error`,
  why a step failed where no job says so (a child that would be too deep).
- `workflows.parent_id`, `parent_step`: the step whose child a workflow is (NULL: a top workflow), listed by
  `idx_workflows_parent`; `depth`, its level (0 for a top workflow).
- `workflows.timeout_seconds`, `deadline`, `error`: a workflow's deadline (the wait timer reads
  `idx_workflows_deadline`, running workflows only) and why it ended, when it timed out.
- `idx_workflow_steps_child`: waiting child steps by their child, for the janitor's heal of a parent that missed
  its child's end.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-07
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    """
    ALTER TABLE queueflow.workflow_steps
        ADD COLUMN child JSONB,
        ADD COLUMN child_workflow_id TEXT COLLATE "C",
        ADD COLUMN error TEXT
    """,
    """
    ALTER TABLE queueflow.workflows
        ADD COLUMN parent_id TEXT COLLATE "C",
        ADD COLUMN parent_step TEXT,
        ADD COLUMN depth INTEGER NOT NULL DEFAULT 0,
        ADD COLUMN timeout_seconds DOUBLE PRECISION,
        ADD COLUMN deadline TIMESTAMPTZ,
        ADD COLUMN error TEXT
    """,
    """
    CREATE INDEX idx_workflows_parent ON queueflow.workflows (parent_id, created_at DESC, id DESC)
        WHERE parent_id IS NOT NULL
    """,
    """
    CREATE INDEX idx_workflows_deadline ON queueflow.workflows (deadline)
        WHERE status = 'running' AND deadline IS NOT NULL
    """,
    """
    CREATE INDEX idx_workflow_steps_child ON queueflow.workflow_steps (child_workflow_id)
        WHERE status = 'waiting' AND child_workflow_id IS NOT NULL
    """,
]

DOWNGRADE = [
    "DROP INDEX queueflow.idx_workflow_steps_child",
    "DROP INDEX queueflow.idx_workflows_deadline",
    "DROP INDEX queueflow.idx_workflows_parent",
    """
    ALTER TABLE queueflow.workflows
        DROP COLUMN parent_id, DROP COLUMN parent_step, DROP COLUMN depth, DROP COLUMN timeout_seconds,
        DROP COLUMN deadline, DROP COLUMN error
    """,
    "ALTER TABLE queueflow.workflow_steps DROP COLUMN child, DROP COLUMN child_workflow_id, DROP COLUMN error",
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
