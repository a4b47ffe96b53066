"""The PostgresJobStore's SQL for jobs (the claim's is in the `claim` package, the queues' in
`queues`): one statement per store operation, each with the state change it makes.

`$n` parameters, for asyncpg, which prepares each statement once per connection and reuses it.
"""

import functools

COLUMNS = (
    "id, tenant_id, queue_name, task_name, payload, config, status, priority, scheduled_at, locked_until,"
    " lease_token, delivery_count, retry_count, max_retries, timeout_seconds, next_retry_at, workflow_id,"
    " workflow_step_id, result, error_message, metadata, idempotency_key, created_at, started_at, completed_at,"
    " progress, trace_context, unique_key, expires_at, sequence_key, sequence_halt"
)
# The key of a job's `config` where a claim keeps the started_at it overwrites, an earlier delivery's, for a release
# to put back (`fair_sql.lease`).
STARTED_BEFORE = "started_before"

J_COLUMNS = ", ".join(f"j.{name.strip()}" for name in COLUMNS.split(","))
"""COLUMNS of the row aliased `j`, for statements that join another relation with the same column names."""

INSERT_COLUMNS = (
    ("id", "text"), ("tenant_id", "text"), ("queue_name", "text"), ("task_name", "text"), ("payload", "jsonb"),
    ("config", "jsonb"), ("priority", "int"), ("scheduled_at", "timestamptz"), ("max_retries", "int"),
    ("timeout_seconds", "float8"), ("metadata", "jsonb"), ("idempotency_key", "text"), ("created_at", "timestamptz"),
    ("workflow_id", "text"), ("workflow_step_id", "text"), ("trace_context", "jsonb"),
)  # fmt: skip
"""The columns an insert of jobs writes, in the order of its parameters (`rows.insert_columns`), with their types."""
UNIQUE_INSERT_COLUMN = ("unique_key", "text")
EXPIRES_INSERT_COLUMN = ("expires_at", "timestamptz")
SEQUENCE_INSERT_COLUMNS = (("sequence_key", "text"), ("sequence_halt", "boolean"))

LOOKAHEAD_SECONDS = 5
"""How far ahead of its writing a job may be due and still go into the current generation of the claim's index
(migration 0022 writes the same bound into its trigger): a few janitor passes' worth, so that a job due soon does not
keep its generation live for long, and most jobs (due at once) never move."""


CURRENT_GENERATION = "(SELECT max(g.gen) FROM queueflow.claim_generations AS g)"
"""The generation writers write (migration 0022): the registry's highest."""


def generation(scheduled_at: str, created_at: str) -> str:
    """The generation of the claim's index (migration 0022, `generations`) a job written due at `scheduled_at` (an
    SQL expression) at `created_at` goes in: 0 when it is due later than the lookahead (a delayed job must not keep
    a generation live until it is due), else the current one, read once per statement (an InitPlan: the column's
    default, `queueflow.current_generation()`, would read the registry once per row)."""
    return (
        f"CASE WHEN {scheduled_at} > {created_at} + interval '{LOOKAHEAD_SECONDS} seconds' THEN 0"
        f" ELSE {CURRENT_GENERATION} END"
    )


@functools.lru_cache(maxsize=128)
def insert_sql(
    shared: tuple[bool, ...], *, returning: bool, unique: bool = False, expires: bool = False, sequence: bool = False
) -> str:
    """The INSERT of jobs whose parameters are `INSERT_COLUMNS` in order: a column `shared` by every row is one
    value, the others are arrays unnested row by row. A batch of one task repeats its tenant, queue, task, policy,
    times and empty metadata on every row; each array element is encoded by asyncpg (with an ABC isinstance check
    apiece) and decoded by PostgreSQL, so thirteen of sixteen arrays of a thousand equal values were most of the
    insert's cost. A single job is then one row of plain parameters. jsonb travels as text, cast here: asyncpg
    encodes a text array in C, where a jsonb array calls the connection's Python codec once per element.

    Only the ids come back, and only when asked: an inserted row is exactly the Job that was sent, so reading it
    back would only cost decoding; and without an idempotency key every row sent is inserted.

    With `unique`, the rows' `unique_key` is a last column (`UNIQUE_INSERT_COLUMN`): only an enqueue with rules
    writes it, so the other inserts (a workflow's, whose statements number `INSERT_COLUMNS`) stay as they were. With
    `expires`, the rows' `expires_at` after that (`EXPIRES_INSERT_COLUMN`), for the same reason: only a batch with a
    deadline sends it. With `sequence`, the rows' `sequence_key` and `sequence_halt` last (`SEQUENCE_INSERT_COLUMNS`),
    sent only by a batch with a job of a sequence."""
    columns = (
        *INSERT_COLUMNS,
        *((UNIQUE_INSERT_COLUMN,) if unique else ()),
        *((EXPIRES_INSERT_COLUMN,) if expires else ()),
        *(SEQUENCE_INSERT_COLUMNS if sequence else ()),
    )
    values, arrays, names = [], [], []
    for number, ((name, kind), one) in enumerate(zip(columns, shared, strict=True), start=1):
        sent, cast = ("text", "::jsonb") if kind == "jsonb" else (kind, "")
        if one:
            values.append(f"${number}::{sent}{cast}")
        else:
            values.append(f"u.{name}{cast}")
            arrays.append(f"${number}::{sent}[]")
            names.append(name)
    value_of = dict(zip((name for name, _ in columns), values, strict=True))
    values.append(generation(value_of["scheduled_at"], value_of["created_at"]))
    rows = f"\n  FROM unnest({', '.join(arrays)}) AS u({', '.join(names)})" if arrays else ""
    return (
        f"INSERT INTO queueflow.jobs ({', '.join(name for name, _ in columns)}, gen)\n"
        f"SELECT {', '.join(values)}{rows}\n"
        "ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING"
        + ("\nRETURNING id" if returning else "")
    )


# A waiter's request: from now on this job's finish NOTIFYs `queueflow_done` (the jobs_notify_done trigger). A row
# another statement is finishing is waited for, and then left alone: finished, it has nothing left to announce.
JOB_AWAIT = """
UPDATE queueflow.jobs SET awaited = true
 WHERE id = $1 AND tenant_id = $2 AND NOT awaited AND status IN ('pending', 'running', 'retrying')
"""

SELECT_BY_KEYS = f"""
SELECT {COLUMNS} FROM queueflow.jobs
 WHERE (tenant_id, idempotency_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))
"""

# The lease {token} still holds job j. The status test sits inside CASE so that it does not imply the predicate of
# idx_jobs_lease_expiry (status = 'running'): the planner then reaches j only by its primary key, and a batch
# (ack, heartbeat, release) costs its own size. With the test in plain sight, statistics that lagged a burst of
# inserts (taken while the table was near empty) made the planner read every running job through that index and
# hash them, on every ack: a worker that leased ahead faster than it acked slowed each ack further, until acks of
# 1,000 outcomes outlived the statement timeout on a 100,000-job backlog (tests/postgres/test_claim_plan.py).
HOLDS_LEASE = "CASE WHEN j.status = 'running' THEN j.lease_token END = {token} AND j.locked_until > {now}"

# A job (the row aliased {row}) has just ended. If some tenant caps how many of its jobs run in its queue, a slot
# came free: the queue is announced, and a lease the cap held back takes the next job at once rather than on the
# safety poll. (A cancelled job may not have been running; a spare wake-up is harmless.) One probe of
# idx_queue_settings_restricting per row, which finds nothing on a queue nobody configured; identical
# notifications of one transaction fold into one. Otherwise a job of a sequence announces the queue of its
# sequence's next unstarted job (one probe of idx_jobs_sequence, whose third column `status <> 'running'` the
# redundant test fixes; its own queue if none), which may be another queue:
# a lease parked there takes that job at once. (A sequence job of a capped queue announces only its own queue.)
SLOT_FREED = """CASE WHEN EXISTS (SELECT FROM queueflow.queue_settings AS fs
                    WHERE fs.queue_name = {row}.queue_name
                      AND (fs.concurrency_limit IS NOT NULL OR fs.key_concurrency_limit IS NOT NULL))
          THEN pg_notify('queueflow_work', {row}.queue_name)
          WHEN {row}.sequence_key IS NOT NULL
          THEN pg_notify('queueflow_work', coalesce(
                   (SELECT n.queue_name FROM queueflow.jobs AS n
                     WHERE n.tenant_id = {row}.tenant_id AND n.sequence_key = {row}.sequence_key AND n.id > {row}.id
                       AND n.status IN ('pending', 'retrying') AND n.status <> 'running'
                     ORDER BY n.id LIMIT 1),
                   {row}.queue_name)) END"""

HEARTBEAT = f"""
UPDATE queueflow.jobs AS j
   SET locked_until = LEAST($3 + $4::interval, j.started_at + make_interval(secs => j.timeout_seconds))
 WHERE j.id = $1 AND {HOLDS_LEASE.format(token="$2", now="$3")}
RETURNING {J_COLUMNS}
"""

# Only what a heartbeat answers comes back: a batched heartbeat needs no row. Progress is written only for items
# that report it (`reported`; a reported JSON null is SQL NULL, as in HEARTBEAT_WITH_PROGRESS).
HEARTBEAT_MANY = f"""
UPDATE queueflow.jobs AS j
   SET locked_until = LEAST($3 + $4::interval, j.started_at + make_interval(secs => j.timeout_seconds)),
       progress = CASE WHEN h.reported THEN h.progress ELSE j.progress END
  FROM unnest($1::text[], $2::uuid[], $5::bool[], $6::jsonb[]) AS h(id, lease_token, reported, progress)
 WHERE j.id = h.id AND {HOLDS_LEASE.format(token="h.lease_token", now="$3")}
RETURNING j.id, h.lease_token::text AS held_token, j.locked_until
"""

# A heartbeat that reports progress: the same, and the progress replaced ($5 is NULL for a JSON null).
HEARTBEAT_WITH_PROGRESS = f"""
UPDATE queueflow.jobs AS j
   SET locked_until = LEAST($3 + $4::interval, j.started_at + make_interval(secs => j.timeout_seconds)),
       progress = $5::jsonb
 WHERE j.id = $1 AND {HOLDS_LEASE.format(token="$2", now="$3")}
RETURNING {J_COLUMNS}
"""

# A claim handed back: the row as the claim found it (`fair_sql.lease`). A claimable job is `retrying` exactly when
# a retry was counted (retry_count > 0; a DLQ replay resets both), the claim left scheduled_at alone, and the
# started_at it overwrote is in config (STARTED_BEFORE; a claim made by an older server did not keep it, and then
# the released claim's stays). A first delivery had none. An UPDATE does not fire the insert trigger, so the queue
# is announced here.
RELEASE = f"""
WITH released AS (
    UPDATE queueflow.jobs AS j
       SET status = CASE WHEN j.retry_count > 0 THEN 'retrying' ELSE 'pending' END,
           delivery_count = j.delivery_count - 1,
           started_at = CASE WHEN j.delivery_count > 1
                             THEN coalesce((j.config->>'{STARTED_BEFORE}')::timestamptz, j.started_at) END,
           lease_token = NULL, locked_until = NULL
      FROM unnest($1::text[], $2::uuid[]) AS r(id, lease_token)
     WHERE j.id = r.id AND {HOLDS_LEASE.format(token="r.lease_token", now="$3")}
    RETURNING {J_COLUMNS}, r.lease_token::text AS held_token)
SELECT released.*, pg_notify('queueflow_work', queue_name) FROM released
"""

# Only what an ack needs comes back (decoding whole rows was a third of a batched ack's cost, measured).
COMPLETE = f"""
UPDATE queueflow.jobs AS j
   SET status = 'completed', result = c.result, completed_at = $4, lease_token = NULL, locked_until = NULL
  FROM unnest($1::text[], $2::uuid[], $3::jsonb[]) AS c(id, lease_token, result)
 WHERE j.id = c.id AND {HOLDS_LEASE.format(token="c.lease_token", now="$4")}
RETURNING j.id, c.lease_token::text AS held_token, j.queue_name, j.workflow_id, j.workflow_step_id,
          {SLOT_FREED.format(row="j")}
"""

# One job's completion, answering its whole row: `POST .../complete` returns the Job, and reading it afresh would
# cost a second round trip per request.
COMPLETE_ONE = f"""
UPDATE queueflow.jobs AS j
   SET status = 'completed', result = $3::jsonb, completed_at = $4, lease_token = NULL, locked_until = NULL
 WHERE j.id = $1 AND {HOLDS_LEASE.format(token="$2::uuid", now="$4")}
RETURNING {J_COLUMNS}, {SLOT_FREED.format(row="j")}
"""

# Both kinds of failure in one statement: a retry_at means retrying, none means dead_letter. A retry announces
# its queue, as an insert does, so a parked lease learns when it becomes due (identical notifications fold).
FAIL = f"""
WITH failed AS (
    UPDATE queueflow.jobs AS j
       SET status = CASE WHEN f.retry_at IS NULL THEN 'dead_letter' ELSE 'retrying' END,
           retry_count = j.retry_count + (f.retry_at IS NOT NULL)::int,
           scheduled_at = coalesce(f.retry_at, j.scheduled_at),
           next_retry_at = coalesce(f.retry_at, j.next_retry_at),
           completed_at = CASE WHEN f.retry_at IS NULL THEN $5 ELSE j.completed_at END,
           error_message = f.error, lease_token = NULL, locked_until = NULL
      FROM unnest($1::text[], $2::uuid[], $3::text[], $4::timestamptz[]) AS f(id, lease_token, error, retry_at)
     WHERE j.id = f.id AND {HOLDS_LEASE.format(token="f.lease_token", now="$5")}
    RETURNING {J_COLUMNS}, f.lease_token::text AS held_token)
SELECT failed.*, CASE WHEN status = 'retrying' THEN pg_notify('queueflow_work', queue_name) END,
       {SLOT_FREED.format(row="failed")}
  FROM failed
"""

CANCEL = f"""
UPDATE queueflow.jobs AS j
   SET status = 'cancelled', lease_token = NULL, locked_until = NULL, completed_at = $3
 WHERE j.id = $2 AND j.tenant_id = $1 AND j.status IN ('pending', 'retrying', 'running')
RETURNING {J_COLUMNS}, {SLOT_FREED.format(row="j")}
"""

# An UPDATE does not fire the insert trigger, so a replayed job announces itself.
RETRY = f"""
WITH replayed AS (
    UPDATE queueflow.jobs
       SET status = 'pending', retry_count = 0, scheduled_at = $3, next_retry_at = NULL, completed_at = NULL,
           expires_at = NULL,
           sequence_halt = CASE WHEN sequence_key IS NOT NULL THEN config->>'sequence_on_failure' = 'halt' END
     WHERE id = $2 AND tenant_id = $1 AND status IN ('dead_letter', 'cancelled')
    RETURNING {COLUMNS})
SELECT *, pg_notify('queueflow_work', queue_name) FROM replayed
"""

# SKIP LOCKED, and the re-check of `locked_until <= $1` that FOR UPDATE makes on a row another janitor has
# just re-leased, let any number of janitors sweep at once and take each expired row once. The sweep starts at
# the janitor's floor $4 (NULL: the bottom), an index bound, so that it does not step over the dead versions of
# every lease that ended below it while the xmin horizon is held (`sweep_floor`).
LEASE_EXPIRED = f"""
WITH expired AS (
    SELECT id, locked_until FROM queueflow.jobs
     WHERE status = 'running' AND locked_until <= $1 AND locked_until >= coalesce($4::timestamptz, '-infinity')
     ORDER BY locked_until, id
     LIMIT $2
     FOR UPDATE SKIP LOCKED)
UPDATE queueflow.jobs AS j SET locked_until = $1 + $3::interval, lease_token = gen_random_uuid()
  FROM expired WHERE j.id = expired.id
RETURNING {J_COLUMNS}, expired.locked_until AS expired_at
"""
