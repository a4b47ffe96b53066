"""The SQL of PostgresWorkflows (`workflows.py`): one statement per step of a store operation, with the state
change it makes. How a finish locks, and why, is `core.finish`'s docstring; the statements below follow it.

`$n` parameters, for asyncpg, which prepares each statement once per connection and reuses it.
"""

from queueflow.core.workflow import CONTEXT_KEY
from queueflow.stores.postgres.sql import J_COLUMNS, SLOT_FREED, generation

# A step whose result is in the context (`core.advance.satisfied`), for a row aliased `s`.
SATISFIED = "(s.status = 'completed' OR (s.status IN ('failed', 'cancelled') AND s.on_failure = 'continue'))"

# A workflow's context as the API shows it and a step's `_context` receives it: the caller's initial context, then
# every satisfied step's result under its name (a result wins over an initial entry of the same name, as when
# results were merged into the context). For the workflows row aliased `w`; reads its steps by primary key.
CONTEXT = f"""w.context || COALESCE((SELECT jsonb_object_agg(s.name, s.result) FROM queueflow.workflow_steps AS s
                                     WHERE s.workflow_id = w.id AND {SATISFIED}), '{{}}')"""

WORKFLOW_COLUMNS = (
    f"w.id, w.tenant_id, w.name, w.status, {CONTEXT} AS context, w.idempotency_key, w.created_at, w.completed_at,"
    " w.trace_context, w.parent_id, w.parent_step, w.depth, w.timeout_seconds, w.deadline, w.error"
)
# A step without its edges: what a finish reads of a dependent (it decides on `remaining`). A fan-in's
# `depends_on` is as long as the fan: read by each of the fan's finishes, it made a 10,000-wide fan-out's cost
# quadratic (each finish detoasted and decoded the join's 10,000 names).
# A dependent that is a wait step becomes `waiting` (or due, with a signal kept): its wait and signal are read too;
# one that is a child step starts its child (or retries the one it made).
DEPENDENT_COLUMNS = (
    "workflow_id, name, idx, task_name, payload, on_failure, status, job_id, queue_name, priority, max_retries,"
    " config, timeout_seconds, remaining, wait, due_at, signal_payload, signal_received_at, child,"
    " child_workflow_id, error"
)
STEP_COLUMNS = f"{DEPENDENT_COLUMNS}, depends_on, dependents, added_by, added_as"

WORKFLOW_INSERT = """
INSERT INTO queueflow.workflows (id, tenant_id, name, status, context, idempotency_key, created_at, updated_at,
                                 trace_context, unfinished, partial, steps, parent_id, parent_step, depth,
                                 timeout_seconds, deadline)
VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $7, $8::jsonb, $9, $10, $11, $12, $13, $14, $15, $16)
ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
RETURNING id
"""

WORKFLOW_AWAIT = """
UPDATE queueflow.workflows SET awaited = true WHERE id = $1 AND tenant_id = $2 AND NOT awaited AND status = 'running'
"""

WORKFLOW_BY_KEY = f"""
SELECT {WORKFLOW_COLUMNS} FROM queueflow.workflows AS w WHERE w.tenant_id = $1 AND w.idempotency_key = $2
"""

# depends_on and dependents travel as one JSON array per step: unnest() would flatten a text[][] (and demand it
# rectangular). One statement for every step, however many.
STEPS_INSERT = """
INSERT INTO queueflow.workflow_steps (workflow_id, name, idx, task_name, payload, depends_on, on_failure, status,
                                      job_id, queue_name, priority, max_retries, config, timeout_seconds,
                                      remaining, dependents, wait, due_at, added_by, added_as, child,
                                      child_workflow_id, error)
SELECT $1, s.name, s.idx, s.task_name, s.payload, ARRAY(SELECT jsonb_array_elements_text(s.depends_on)),
       s.on_failure, s.status, s.job_id, s.queue_name, s.priority, s.max_retries, s.config, s.timeout_seconds,
       s.remaining, ARRAY(SELECT jsonb_array_elements_text(s.dependents)), s.wait, s.due_at, s.added_by, s.added_as,
       s.child, s.child_workflow_id, s.error
  FROM unnest($2::text[], $3::int[], $4::text[], $5::jsonb[], $6::jsonb[], $7::text[], $8::text[], $9::text[],
              $10::text[], $11::int[], $12::int[], $13::jsonb[], $14::float8[], $15::int[], $16::jsonb[],
              $17::jsonb[], $18::timestamptz[], $19::text[], $20::jsonb[], $21::jsonb[], $22::text[], $23::text[])
       AS s(name, idx, task_name, payload, depends_on, on_failure, status, job_id, queue_name, priority,
            max_retries, config, timeout_seconds, remaining, dependents, wait, due_at, added_by, added_as, child,
            child_workflow_id, error)
"""

WORKFLOW_GET = f"""
SELECT {WORKFLOW_COLUMNS} FROM queueflow.workflows AS w WHERE w.id = $1 AND ($2::text IS NULL OR w.tenant_id = $2)
"""

STEPS_OF = f"""
SELECT {STEP_COLUMNS} FROM queueflow.workflow_steps WHERE workflow_id = ANY($1::text[]) ORDER BY workflow_id, idx
"""

# ---- a change of the whole workflow (`workflow_advance`) ----------------------------------------------------

# The lock a structural change takes first: it waits for every finish in flight (their KEY SHARE) and holds off
# new ones. The snapshot is read by the statements after it, so that it includes what those finishes committed.
WORKFLOW_LOCK = """
SELECT id FROM queueflow.workflows WHERE id = $1 AND ($2::text IS NULL OR tenant_id = $2) FOR UPDATE
"""

WORKFLOW_RECORD = """
UPDATE queueflow.workflows
   SET status = $2, completed_at = $3, updated_at = $4, unfinished = $5, partial = $6, deadline = $7, error = $8
 WHERE id = $1
"""

# Guarded by each row's status in the locked snapshot: under the workflow's lock they always match, and if a
# write ever bypassed the lock the mismatch shows in the count (and the store rolls back) instead of corrupting.
# Only the finished step has a result to keep (NULL for the others: theirs stays).
STEPS_RECORD = """
UPDATE queueflow.workflow_steps AS s
   SET status = c.status, job_id = c.job_id, remaining = c.remaining, result = COALESCE(c.result, s.result),
       due_at = c.due_at, child_workflow_id = c.child_workflow_id, error = c.error
  FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::jsonb[], $8::timestamptz[],
              $9::text[], $10::text[])
       AS c(name, expect, status, job_id, remaining, result, due_at, child_workflow_id, error)
 WHERE s.workflow_id = $1 AND s.name = c.name AND s.status = c.expect
"""

# ---- a step's finish (`workflow_step_finish`, `core.finish`) ------------------------------------------------

# A finish is two statements, each a round trip (a chain's step waits for every one of them): FINISH takes the
# locks and records the step, COUNT records what `core.finish` decided. Their parts run in `core.finish`'s lock
# order, as the comments say.

# A failure's policy, read before any lock (on_failure never changes): it decides which lock the finish takes.
STEP_ON_FAILURE = "SELECT on_failure FROM queueflow.workflow_steps WHERE workflow_id = $1 AND name = $2"

# 1. `head`: the workflow row FOR KEY SHARE (finishes of one workflow share this lock; a structural change's FOR
#    UPDATE excludes them), read first: `finished` reads it.
# 2. `finished`: the step enqueued → completed | failed | cancelled ($4), with its result ($5): only for the step's
#    own job ($3), once, and only while the workflow runs. With no job ($3 NULL) it is the end of a wait:
#    waiting → completed | failed, only while the row is as the end was decided on (`core.advance.is_reported`:
#    its due time $6, a signal kept or not $7), so a stale timeout or a second process's end records nothing.
# 3. The finished step's pending dependents, locked in name order (every finisher locks in this order, so none
#    waits on another in a cycle), as they are once their locks are granted; read after `finished`, whose
#    `dependents` name them. Each by its primary key, name by name (OFFSET 0 keeps the lookups apart): as one scan
#    of the workflow's rows filtered by `name = ANY(dependents)`, the plan PostgreSQL chose once the statistics of
#    smaller workflows put this one at a row or two, each sibling of a 9,998-wide fan-out read all 10,000 rows.
# One row per locked dependent (`d_*` columns, and `dependent_ctid`, by which COUNT updates it), or one row without
# them; `finished` false if nothing was recorded (a repeat, a late report, a workflow no longer running); no row if
# the workflow does not exist.
FINISH = f"""
WITH head AS (
    SELECT id, tenant_id, name, status, idempotency_key, created_at, trace_context, depth
      FROM queueflow.workflows WHERE id = $1 FOR KEY SHARE
), finished AS (
    UPDATE queueflow.workflow_steps AS s SET status = $4, result = $5::jsonb, due_at = NULL
      FROM head
     WHERE s.workflow_id = $1 AND s.name = $2 AND head.status = 'running'
       AND CASE WHEN $3::text IS NULL
                THEN s.status = 'waiting' AND s.job_id IS NULL AND s.due_at IS NOT DISTINCT FROM $6::timestamptz
                     AND (s.signal_received_at IS NOT NULL) = $7::boolean
                ELSE s.status = 'enqueued' AND s.job_id = $3 END
    RETURNING s.dependents
)
SELECT h.*, f.dependents IS NOT NULL AS finished, d.*
  FROM head AS h
  LEFT JOIN finished AS f ON true
  LEFT JOIN LATERAL (
        SELECT d.ctid AS dependent_ctid,
               {", ".join(f"d.{column} AS d_{column}" for column in DEPENDENT_COLUMNS.split(", "))}
          FROM (SELECT n.name FROM unnest(f.dependents) AS n(name) ORDER BY n.name OFFSET 0) AS n
         CROSS JOIN LATERAL (SELECT ctid, {DEPENDENT_COLUMNS} FROM queueflow.workflow_steps
                              WHERE workflow_id = $1 AND name = n.name AND status = 'pending'
                              OFFSET 0 FOR UPDATE) AS d
       ) AS d ON true
"""

# A step's finish commits asynchronously. Its locks (the dependents' rows, FINISH … COMMIT) are held until its
# commit returns, and a synchronous commit holds them through the WAL flush too: the finishes of a fan-in's siblings,
# which queue on the join's row, each waited for the one before it to reach the disk (a 10,000-wide fan-out's
# FINISH waited 30 ms on average at load, its COMMIT 5 ms). Were PostgreSQL to crash before the flush (a fraction of
# a second later), the finish would be lost, never the job's own outcome, which its worker's ack commits
# synchronously before: the step is then `enqueued` with its job finished, which the janitor heals
# (`Workflows.heal`), as after a server crash between the two. Any later synchronous commit flushes it first.
BEGIN_FINISH = "BEGIN; SET LOCAL synchronous_commit = off"

# COUNT's plan is the prepared statement's: after five executions PostgreSQL may keep a generic plan, costed for the
# few rows a chain or a small fan-in records (an unnest of a parameter is estimated at 10 rows). A root whose
# finish enqueues thousands of dependents then ran it with that plan past the statement timeout (10 s, again on
# every retry, until the janitor healed it minutes later: the bench's 1 → 9,998 → 1 fan-out after the smaller
# shapes), where a custom plan takes a second. A finish that records more than WIDE_FINISH steps plans COUNT anew
# (one more round trip, beside thousands of rows); the small ones keep the cached plan.
WIDE_FINISH = 64
CUSTOM_PLAN = "SET LOCAL plan_cache_mode = force_custom_plan"

# What the finish decided, in one statement that starts after FINISH's locks were granted:
# - `recorded`: the dependents that stay pending get their new count ($18–$21, $24: ctid, remaining, status,
#   job_id, due_at), and those that reached 0 become enqueued with their new job, or waiting with a due time.
#   Each row by the ctid FINISH read it at: FINISH locked it, pending, in this transaction, so it has no newer
#   version, and the statement names no column the planner could misjudge. Joined on (workflow_id, name) instead,
#   PostgreSQL, told by the statistics of smaller workflows that a new one has a row or two, scanned the
#   workflow's every row: 14 ms a sibling of a 9,998-wide fan-out, under the join's lock (88 s against 14 fresh);
#   with a `status = 'pending'` filter it scanned the table once per dependent;
# - `inserted`: those jobs ($1–$16: `rows.insert_columns`), each payload given its `_context` here. The context is
#   assembled once, in SQL, by this statement, which starts after FINISH's locks were granted, so it holds the
#   result of every dependency (each committed its result before its lock on the dependent came free).
#   MATERIALIZED: as a plain subquery in the join the planner rescanned it, aggregating the whole context again for
#   each inserted row (a root's finish enqueueing 9,998 steps took minutes); and only when there are jobs to
#   insert (it reads every satisfied step's row);
# - last, the workflow's count of unfinished steps ($22, and $23: the finish was a failure). An UPDATE that changes
#   no key column takes FOR NO KEY UPDATE, which the other finishes' KEY SHARE allows: finishers queue here only
#   for the moment between this statement and their commit. It leaves updated_at (indexed) alone, so that it can
#   be a HOT update.
# ($17: the workflow.)
COUNT = f"""
WITH recorded AS (
    UPDATE queueflow.workflow_steps AS s
       SET remaining = c.remaining, status = c.status, job_id = c.job_id, due_at = c.due_at,
           child_workflow_id = COALESCE(c.child_workflow_id, s.child_workflow_id), error = c.error
      FROM unnest($18::tid[], $19::int[], $20::text[], $21::text[], $24::timestamptz[], $25::text[], $26::text[])
           AS c(at, remaining, status, job_id, due_at, child_workflow_id, error)
     WHERE s.ctid = c.at
), c AS MATERIALIZED (
    SELECT {CONTEXT} AS context FROM queueflow.workflows AS w WHERE w.id = $17 AND cardinality($1::text[]) > 0
), inserted AS (
    INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, payload, config, priority, scheduled_at,
                                max_retries, timeout_seconds, metadata, idempotency_key, created_at, workflow_id,
                                workflow_step_id, trace_context, gen)
    SELECT j.id, j.tenant_id, j.queue_name, j.task_name,
           j.payload || jsonb_build_object('{CONTEXT_KEY}', c.context), j.config, j.priority, j.scheduled_at,
           j.max_retries, j.timeout_seconds, j.metadata, j.idempotency_key, j.created_at, j.workflow_id,
           j.workflow_step_id, j.trace_context, {generation("j.scheduled_at", "j.created_at")}
      FROM c, unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::jsonb[], $7::int[],
                     $8::timestamptz[], $9::int[], $10::float8[], $11::jsonb[], $12::text[], $13::timestamptz[],
                     $14::text[], $15::text[], $16::jsonb[])
           AS j(id, tenant_id, queue_name, task_name, payload, config, priority, scheduled_at, max_retries,
                timeout_seconds, metadata, idempotency_key, created_at, workflow_id, workflow_step_id, trace_context)
)
UPDATE queueflow.workflows
   SET unfinished = unfinished - $22, partial = partial OR $23
 WHERE id = $17 AND status = 'running'
RETURNING unfinished, partial
"""

# The count reached 0 (`core.finish.counted_status`): the row is this transaction's until it commits. A child's
# parent step is returned, for the caller to end (`core.children`).
WORKFLOW_END = """
UPDATE queueflow.workflows SET status = $2, completed_at = $3, updated_at = $3 WHERE id = $1 AND status = 'running'
RETURNING parent_id, parent_step
"""

# The jobs of steps a structural change cancelled (a cancel's, a halt's or a timeout's, down its tree of child
# workflows: all of them, in one statement), if they have not finished. Locked in id order first: a batched ack
# locks its jobs in id order too (`jobs.job_complete_many`), so an ack of jobs of several children and the cancel
# of their parent cannot each hold a job the other waits for (measured: a deadlock, before, between an ack and a
# cascade that cancelled child after child).
CANCEL_STEP_JOBS = f"""
WITH locked AS (
    SELECT id FROM queueflow.jobs
     WHERE id = ANY($1::text[]) AND status IN ('pending', 'retrying', 'running')
     ORDER BY id FOR UPDATE
)
UPDATE queueflow.jobs AS j
   SET status = 'cancelled', lease_token = NULL, locked_until = NULL, completed_at = $2
  FROM locked
 WHERE j.id = locked.id
RETURNING {SLOT_FREED.format(row="j")}
"""

# ---- maintenance -----------------------------------------------------------------------------------------

# Running workflows only (idx_workflows_running), their enqueued steps by primary key, each step's job by id; only
# jobs that finished before $2, so an advance in flight is never replayed.
STALLED_JOBS = f"""
SELECT {J_COLUMNS}
  FROM queueflow.workflows AS w
  JOIN queueflow.workflow_steps AS s ON s.workflow_id = w.id AND s.status = 'enqueued'
  JOIN queueflow.jobs AS j ON j.id = s.job_id AND j.status IN ('completed', 'dead_letter', 'cancelled')
                          AND j.completed_at < $2
 WHERE w.status = 'running'
 ORDER BY w.updated_at, s.workflow_id, s.idx
 LIMIT $1
"""

# ---- signals and due waits (`workflow_growth`) -------------------------------------------------------------

# The workflow row FOR KEY SHARE (a change of the whole workflow waits for the signal, as for a finish), then the
# step waiting for the signal FOR UPDATE: a finish that makes it wait locks it too, so one of the two sees the
# other's write. One row with the workflow (no row: no workflow for the tenant), `s_*` NULL with no such step.
SIGNAL_STEP = f"""
WITH head AS (
    SELECT id, status FROM queueflow.workflows WHERE id = $1 AND tenant_id = $2 FOR KEY SHARE
)
SELECT h.id, h.status AS workflow_status, s.*
  FROM head AS h
  LEFT JOIN LATERAL (
        SELECT {", ".join(f"{column} AS s_{column}" for column in STEP_COLUMNS.split(", "))}
          FROM queueflow.workflow_steps WHERE workflow_id = $1 AND signal = $3
           FOR UPDATE
       ) AS s ON true
"""

# The signal kept ($3, $4) on step $2; a waiting step is due now ($4), for the caller to end.
SIGNAL_KEEP = """
UPDATE queueflow.workflow_steps
   SET signal_payload = $3::jsonb, signal_received_at = $4,
       due_at = CASE WHEN status = 'waiting' THEN $4 ELSE due_at END
 WHERE workflow_id = $1 AND name = $2
RETURNING status, due_at
"""

# Waits due at $1 (idx_workflow_steps_due), of running workflows.
WAITS_DUE = """
SELECT s.workflow_id, s.name, s.wait, s.due_at, s.signal_payload, s.signal_received_at, s.child_workflow_id
  FROM queueflow.workflow_steps AS s
  JOIN queueflow.workflows AS w ON w.id = s.workflow_id AND w.status = 'running'
 WHERE s.status = 'waiting' AND s.due_at IS NOT NULL AND s.due_at <= $1
 ORDER BY s.due_at
 LIMIT $2
"""

NEXT_WAIT_DUE = """
SELECT min(due_at) FROM queueflow.workflow_steps WHERE status = 'waiting' AND due_at IS NOT NULL
"""

# The job that adds steps, held FOR SHARE until the addition commits (its completion waits for it).
JOB_FOR_SHARE = (
    f"SELECT {J_COLUMNS} FROM queueflow.jobs AS j WHERE j.id = $1 AND ($2::text IS NULL OR j.tenant_id = $2) FOR SHARE"
)

# The context a child step's new child receives as `parent_context` (as COUNT assembles a job's `_context`).
WORKFLOW_CONTEXT = f"SELECT {CONTEXT} AS context FROM queueflow.workflows AS w WHERE w.id = $1"

# ---- child workflows and deadlines (`core.children`) --------------------------------------------------------

# Waiting child steps of running workflows (idx_workflow_steps_child) whose child ended before $2: parents'
# advances a crash lost after their child's end.
CHILDREN_ENDED = """
SELECT s.workflow_id, s.name, s.child_workflow_id
  FROM queueflow.workflow_steps AS s
  JOIN queueflow.workflows AS c ON c.id = s.child_workflow_id AND c.status <> 'running' AND c.completed_at < $2
  JOIN queueflow.workflows AS w ON w.id = s.workflow_id AND w.status = 'running'
 WHERE s.status = 'waiting' AND s.child_workflow_id IS NOT NULL
 LIMIT $1
"""

# Running workflows past their deadline at $1 (idx_workflows_deadline), earliest first.
DEADLINES_DUE = """
SELECT id FROM queueflow.workflows WHERE status = 'running' AND deadline IS NOT NULL AND deadline <= $1
 ORDER BY deadline LIMIT $2
"""

NEXT_DEADLINE = "SELECT min(deadline) FROM queueflow.workflows WHERE status = 'running' AND deadline IS NOT NULL"
