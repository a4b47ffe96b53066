"""Workflows at scale (issue 29): a step's finish touches its own row, its dependents and one counter.

- `workflow_steps.result`: a step's result lives on its row; `workflows.context` stays the caller's initial
  context, and a workflow's context is assembled when read (`workflow_sql.CONTEXT`).
- `workflow_steps.remaining` (dependencies not yet satisfied) and `dependents` (the reverse of `depends_on`).
- `workflows.unfinished` (steps pending or enqueued) and `partial` (a step ended other than completed).

The backfill makes workflows created before the upgrade advance as new ones do: each satisfied step's result
is taken from the old context (where it had been merged), and the counts are computed from the steps. The old
context keeps those merged results: assembling the initial context and the results gives the same object.
The downgrade merges the results back into the context, as the old advance did.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SATISFIED = "(s.status = 'completed' OR (s.status IN ('failed', 'cancelled') AND s.on_failure = 'continue'))"

UPGRADE = [
    """
    ALTER TABLE queueflow.workflow_steps
        ADD COLUMN result JSONB,
        ADD COLUMN remaining INTEGER NOT NULL DEFAULT 0,
        ADD COLUMN dependents TEXT[] NOT NULL DEFAULT '{}'
    """,
    """
    ALTER TABLE queueflow.workflows
        ADD COLUMN unfinished INTEGER NOT NULL DEFAULT 0,
        ADD COLUMN partial BOOLEAN NOT NULL DEFAULT false
    """,
    f"""
    UPDATE queueflow.workflow_steps AS s SET result = w.context -> s.name
      FROM queueflow.workflows AS w
     WHERE w.id = s.workflow_id AND {SATISFIED}
    """,
    """
    UPDATE queueflow.workflow_steps AS s SET dependents = d.names
      FROM (SELECT t.workflow_id, dependency, array_agg(t.name ORDER BY t.idx) AS names
              FROM queueflow.workflow_steps AS t, unnest(t.depends_on) AS dependency
             GROUP BY t.workflow_id, dependency) AS d
     WHERE s.workflow_id = d.workflow_id AND s.name = d.dependency
    """,
    f"""
    UPDATE queueflow.workflow_steps AS t
       SET remaining = (SELECT count(*) FROM queueflow.workflow_steps AS s
                         WHERE s.workflow_id = t.workflow_id AND s.name = ANY(t.depends_on) AND NOT {SATISFIED})
     WHERE t.status = 'pending'
    """,
    """
    UPDATE queueflow.workflows AS w
       SET unfinished = c.unfinished, partial = c.partial
      FROM (SELECT workflow_id,
                   count(*) FILTER (WHERE status IN ('pending', 'enqueued')) AS unfinished,
                   bool_or(status NOT IN ('pending', 'enqueued', 'completed')) AS partial
              FROM queueflow.workflow_steps GROUP BY workflow_id) AS c
     WHERE w.id = c.workflow_id
    """,
]

DOWNGRADE = [
    f"""
    UPDATE queueflow.workflows AS w
       SET context = w.context || r.results
      FROM (SELECT s.workflow_id, jsonb_object_agg(s.name, s.result) AS results
              FROM queueflow.workflow_steps AS s WHERE {SATISFIED} GROUP BY s.workflow_id) AS r
     WHERE w.id = r.workflow_id
    """,
    "ALTER TABLE queueflow.workflows DROP COLUMN partial, DROP COLUMN unfinished",
    "ALTER TABLE queueflow.workflow_steps DROP COLUMN dependents, DROP COLUMN remaining, DROP COLUMN result",
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
