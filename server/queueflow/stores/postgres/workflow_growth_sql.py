"""The SQL of an addition of steps (`workflow_growth.PostgresWorkflowGrowth.workflow_add_steps`): it reads what the
addition touches (`core.growth.GrowthView`), never every step of the workflow, so that adding 10 steps to a
10,000-step workflow costs what adding them to a 10-step one does.

`$n` parameters, for asyncpg, which prepares each statement once per connection and reuses it.
"""

from queueflow.stores.postgres.workflow_sql import STEP_COLUMNS, WORKFLOW_CONTEXT

# Each step row an addition names is read by its primary key, one lookup a name (a LATERAL subquery kept apart by
# OFFSET 0). Joined to the workflow's rows as a set, the planner read them by a hash or a merge over a scan of the
# whole workflow, taking a workflow for a few rows (its estimate is the table's average): every step of a large one,
# three times an addition (measured: 6,016 rows read to add 10 steps to a 2,002-step workflow).

# The workflow locked as every structural change locks it (`workflow_sql.WORKFLOW_LOCK`: it waits out the
# finishes in flight), and its head read, without its context (assembled from its satisfied steps: read only if
# a new step is enqueued at once, GROWTH_CONTEXT).
GROWTH_HEAD = """
SELECT w.id, w.tenant_id, w.name, w.status, w.idempotency_key, w.created_at, w.completed_at, w.trace_context, w.steps,
       w.depth
  FROM queueflow.workflows AS w WHERE w.id = $1 FOR UPDATE
"""

# A workflow made before revision 0010 has no count yet: counted once (its primary key's entries), then kept.
GROWTH_COUNT = "SELECT count(*) FROM queueflow.workflow_steps WHERE workflow_id = $1"

# The steps named $2 (the new names and the steps they name), and every step that depends, directly or not, on one
# of $3 (the `required_by` targets: its dependents, by their `dependents` lists). By primary key: the names are
# gathered first, so the read is one index scan of those names, not a filter over the workflow's rows.
GROWTH_STEPS = f"""
WITH RECURSIVE below(name) AS (
    SELECT unnest($3::text[])
  UNION
    SELECT d.name
      FROM below
     CROSS JOIN LATERAL (SELECT s.dependents FROM queueflow.workflow_steps AS s
                          WHERE s.workflow_id = $1 AND s.name = below.name OFFSET 0) AS s
     CROSS JOIN LATERAL unnest(s.dependents) AS d(name)
)
SELECT s.* FROM (SELECT DISTINCT n.name FROM unnest($2::text[] || ARRAY(SELECT name FROM below)) AS n(name)) AS n
 CROSS JOIN LATERAL (SELECT {STEP_COLUMNS} FROM queueflow.workflow_steps
                      WHERE workflow_id = $1 AND name = n.name OFFSET 0) AS s
 ORDER BY s.idx
"""

# A rewired row ($2) gets its new edges and count: one statement a row, by its primary key (sent together).
GROWTH_REWIRE = """
UPDATE queueflow.workflow_steps
   SET depends_on = ARRAY(SELECT jsonb_array_elements_text($3::jsonb)),
       dependents = ARRAY(SELECT jsonb_array_elements_text($4::jsonb)), remaining = $5
 WHERE workflow_id = $1 AND name = $2
"""

# Which of the signal names $2 a step of the workflow has (uq_workflow_steps_signal).
GROWTH_SIGNALS = """
SELECT signal FROM queueflow.workflow_steps WHERE workflow_id = $1 AND signal = ANY($2::text[])
"""

# The context a step enqueued at once receives as `_context` (as a finish's COUNT assembles it), and a child step
# started at once as `parent_context`.
GROWTH_CONTEXT = WORKFLOW_CONTEXT

# The new steps counted: $2 more unfinished, partial if one of them was skipped, $3 steps in all.
GROWTH_RECORD = """
UPDATE queueflow.workflows
   SET unfinished = unfinished + $2, partial = partial OR $3, steps = $4, updated_at = $5
 WHERE id = $1
"""
