"""Workflows that grow and wait (issue 31): wait steps, the `waiting` status, kept signals, added steps, and
schedules that start workflows.

Expand-only: every change adds a column, an index or a wider constraint, so a server of revision 0008 keeps
working on this schema (it never writes the new columns, and never meets a `waiting` step or a workflow schedule
unless a newer server made one).

- `workflow_steps.wait`: a wait step's definition (`{"signal", "timeout_seconds"}` or `{"seconds"}`), NULL for a
  step that runs a job; such a step has no `task_name` (now nullable). `signal` is generated from it, unique
  within a workflow (signal names are), and how a signal finds its step.
- `workflow_steps.due_at`: when a `waiting` step's sleep ends or its signal times out (NULL: a signal without a
  timeout), or `now` once its signal is kept; the due-wait sweep reads `idx_workflow_steps_due`.
- `workflow_steps.signal_payload`, `signal_received_at`: a kept signal (received_at NULL: none yet); a signal may
  come before its step waits.
- `workflow_steps.added_by`: the step that added this one at run time (NULL: declared at creation), and
  `added_as`, the definition it was added with, which a repeated add compares against.
- `schedules.workflow`: a workflow to start on each occurrence, instead of a job (`task_name` now nullable).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    """
    ALTER TABLE queueflow.workflow_steps
        ADD COLUMN wait JSONB,
        ADD COLUMN signal TEXT GENERATED ALWAYS AS (wait ->> 'signal') STORED,
        ADD COLUMN due_at TIMESTAMPTZ,
        ADD COLUMN signal_payload JSONB,
        ADD COLUMN signal_received_at TIMESTAMPTZ,
        ADD COLUMN added_by TEXT,
        ADD COLUMN added_as JSONB,
        ALTER COLUMN task_name DROP NOT NULL
    """,
    "ALTER TABLE queueflow.workflow_steps DROP CONSTRAINT workflow_steps_status_check",
    """
    ALTER TABLE queueflow.workflow_steps ADD CONSTRAINT workflow_steps_status_check
        CHECK (status IN ('pending', 'enqueued', 'waiting', 'completed', 'failed', 'skipped', 'cancelled'))
    """,
    """
    CREATE UNIQUE INDEX uq_workflow_steps_signal ON queueflow.workflow_steps (workflow_id, signal)
        WHERE signal IS NOT NULL
    """,
    # The due-wait sweep: only waiting steps with a time, earliest first.
    """
    CREATE INDEX idx_workflow_steps_due ON queueflow.workflow_steps (due_at)
        WHERE status = 'waiting' AND due_at IS NOT NULL
    """,
    """
    ALTER TABLE queueflow.schedules
        ADD COLUMN workflow JSONB,
        ALTER COLUMN task_name DROP NOT NULL
    """,
]

# 0008 cannot hold what this revision added: workflow schedules are deleted, and a wait step is left as a step
# of no task ('') that is cancelled if it was waiting (0007's advance would never end it).
DOWNGRADE = [
    "DELETE FROM queueflow.schedules WHERE task_name IS NULL",
    "ALTER TABLE queueflow.schedules DROP COLUMN workflow, ALTER COLUMN task_name SET NOT NULL",
    "UPDATE queueflow.workflow_steps SET status = 'cancelled' WHERE status = 'waiting'",
    "UPDATE queueflow.workflow_steps SET task_name = '' WHERE task_name IS NULL",
    "DROP INDEX queueflow.idx_workflow_steps_due",
    "DROP INDEX queueflow.uq_workflow_steps_signal",
    "ALTER TABLE queueflow.workflow_steps DROP CONSTRAINT workflow_steps_status_check",
    """
    ALTER TABLE queueflow.workflow_steps ADD CONSTRAINT workflow_steps_status_check
        CHECK (status IN ('pending', 'enqueued', 'completed', 'failed', 'skipped', 'cancelled'))
    """,
    """
    ALTER TABLE queueflow.workflow_steps
        DROP COLUMN added_as, DROP COLUMN added_by, DROP COLUMN signal_received_at, DROP COLUMN signal_payload,
        DROP COLUMN due_at, DROP COLUMN signal, DROP COLUMN wait,
        ALTER COLUMN task_name SET NOT NULL
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
