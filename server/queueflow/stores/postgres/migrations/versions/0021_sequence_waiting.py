"""Sequences' waiting jobs out of the claim's index (issue 43): a claim over a backlog in sequences reads the jobs
it may take, not every job its sequences hold back.

- `jobs.sequence_waiting`: true while a job of a sequence is known to wait behind an earlier one (NULL or false
  otherwise). The claim reads a new index, `idx_jobs_claim_ready`: idx_jobs_claim's columns, its predicate
  with `sequence_waiting IS NOT TRUE`, so the claim, which walks it in claim order, no longer reads and tests a run
  of held-back jobs for each one it takes.
- Expand, then contract (docs/compatibility.md): `idx_jobs_claim` stays as it is, because release 0.2.0's claims,
  which may run beside this one during a rolling deploy, are planned on it (`status IN ('pending', 'retrying')`);
  rebuilt with the narrower predicate it would no longer serve them. The next release drops `idx_jobs_claim` (the
  contract step); until then every job still to start is written into both claim indexes.
  The flag only spares reads: the claim still tests every job it reads (`claim.fair_sql.SEQUENCE_FREE`), so a flag
  that is false while the job waits costs a test, never an overlap. Only a flag left true after the job is free
  would matter (the job would never be claimed); the triggers below are written so that it cannot be.
- Set by a trigger as a job of a sequence is inserted (every path: the HTTP route, `queueflow.enqueue`, workflows):
  true when an earlier job of its sequence holds it, with that job locked FOR SHARE until the insert commits, so it
  cannot stop holding unseen: whoever ends it waits for the insert and then sees the new job.
- Cleared by a trigger when a job of a sequence stops holding it (acked, dead-lettered without halting, cancelled,
  expired, resumed past, deleted by retention: any UPDATE or DELETE, whatever statement made it) and no earlier job
  of it still holds: the sequence's first unstarted job is woken. A waker that finds that job locked waits for it
  and looks again (the job may have stopped holding too). A job that starts (pending → running) or retries changes
  no flag, so the claim fires nothing. A job replayed (dead or cancelled → pending) is written not waiting: one
  cancelled while it waited would otherwise stay out of the index with nothing left to wake it.
- `idx_jobs_sequence` becomes (tenant_id, sequence_key, status <> 'running', id) over the holding jobs: the
  claim's test is one probe (the first entry of the key's range: a running job, else the earliest holder), where it
  was two indexes. `idx_jobs_sequence_running` goes. `idx_jobs_sequence_key` leaves out running jobs (listings by
  key read it and idx_jobs_sequence): a claimed job of a sequence is written into one index of sequences, not three
  — the largest part of what a claim of sequence jobs cost beyond a plain one.
- The claim changes (`SEQUENCE_FREE`, `READY`), so it is made anew as `queueflow.claim_0021`; `claim_0018` stays for
  a server of revision 0019 during a rolling deploy (its probes read the new indexes, slower, still exact: flags it
  does not read cannot make it wrong).

A backlog's existing waiting jobs are flagged here, under the ALTER TABLE's lock, so no write races the backfill.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HOLDING = "(status IN ('pending', 'retrying', 'running') OR (status = 'dead_letter' AND sequence_halt))"

ENQUEUED = r"""
CREATE FUNCTION queueflow.sequence_enqueued() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
    -- The latest earlier job that holds the sequence and is not running (else the latest running one), locked until
    -- this insert commits: it cannot stop holding, and wake the sequence, before this job is visible. A job that
    -- stopped holding since this statement's snapshot fails the lock's recheck, and the next earlier one is tried.
    -- Each is one probe of idx_jobs_sequence (its third column fixed, in id order from NEW.id down).
    PERFORM FROM queueflow.jobs AS s
      WHERE s.tenant_id = NEW.tenant_id AND s.sequence_key = NEW.sequence_key AND s.id < NEW.id
        AND s.status <> 'running'
        AND (s.status IN ('pending', 'retrying', 'running') OR (s.status = 'dead_letter' AND s.sequence_halt))
      ORDER BY s.id DESC LIMIT 1 FOR SHARE;
    IF NOT FOUND THEN
        PERFORM FROM queueflow.jobs AS s
          WHERE s.tenant_id = NEW.tenant_id AND s.sequence_key = NEW.sequence_key AND s.id < NEW.id
            AND (s.status <> 'running') IS FALSE AND s.status = 'running'
          ORDER BY s.id DESC LIMIT 1 FOR SHARE;
    END IF;
    NEW.sequence_waiting := FOUND;
    RETURN NEW;
END
$fn$
"""

WAKE = r"""
CREATE FUNCTION queueflow.sequence_wake(tenant text, key text, ended text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    head record;
BEGIN
    -- Each statement below takes a new snapshot (a volatile function under READ COMMITTED).
    IF EXISTS (SELECT FROM queueflow.jobs AS s
                WHERE s.tenant_id = tenant AND s.sequence_key = key AND s.id < ended AND s.status <> 'running'
                  AND (s.status IN ('pending', 'retrying', 'running')
                       OR (s.status = 'dead_letter' AND s.sequence_halt)))
       OR EXISTS (SELECT FROM queueflow.jobs AS s
                   WHERE s.tenant_id = tenant AND s.sequence_key = key AND s.id < ended
                     AND (s.status <> 'running') IS FALSE AND s.status = 'running')
    THEN
        RETURN;  -- an earlier job still holds everything after it; its own end wakes the sequence
    END IF;
    LOOP
        -- The first holding job that is not running: the one that may start next, unless it is dead and halting.
        SELECT s.id, s.status, s.sequence_waiting INTO head FROM queueflow.jobs AS s
         WHERE s.tenant_id = tenant AND s.sequence_key = key AND s.status <> 'running'
           AND (s.status IN ('pending', 'retrying', 'running') OR (s.status = 'dead_letter' AND s.sequence_halt))
         ORDER BY s.id LIMIT 1;
        IF head.id IS NULL OR head.status = 'dead_letter' OR head.sequence_waiting IS NOT TRUE THEN
            RETURN;
        END IF;
        -- Waits if another transaction holds the row; that one may have ended it: then look again.
        UPDATE queueflow.jobs AS s SET sequence_waiting = false
         WHERE s.id = head.id AND s.status IN ('pending', 'retrying') AND s.sequence_waiting;
        IF FOUND THEN
            RETURN;
        END IF;
    END LOOP;
END
$fn$
"""

# A job that holds again after it stopped (a replay of a dead or cancelled job) is not known to wait: its flag, if it
# was cancelled or expired while waiting, would otherwise keep it out of the claim's index with nobody to wake it.
REPLAYED = r"""
CREATE FUNCTION queueflow.sequence_replayed() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
    NEW.sequence_waiting := false;
    RETURN NEW;
END
$fn$
"""

ENDED = r"""
CREATE FUNCTION queueflow.sequence_ended() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
    PERFORM queueflow.sequence_wake(OLD.tenant_id, OLD.sequence_key, OLD.id);
    RETURN NULL;
END
$fn$
"""


def holding(row: str) -> str:
    """Whether the job `row` (OLD or NEW) holds its sequence, never NULL (a trigger's WHEN of NULL is false)."""
    return (
        f"({row}.status IN ('pending', 'retrying', 'running')"
        f" OR ({row}.status = 'dead_letter' AND {row}.sequence_halt IS TRUE))"
    )


# The claim function of this revision: `claim.function.claim_function_ddl` of CLAIM (its text as it shipped).
CLAIM_0021 = r"""
CREATE FUNCTION queueflow.claim_0021(text[], int, timestamptz, interval, text[], text[])
RETURNS TABLE ("id" text, "tenant_id" text, "queue_name" text, "task_name" text, "payload" jsonb, "config" jsonb,
    "status" text, "priority" integer, "scheduled_at" timestamp with time zone, "locked_until" timestamp with time
    zone, "lease_token" uuid, "delivery_count" integer, "retry_count" integer, "max_retries" integer,
    "timeout_seconds" double precision, "next_retry_at" timestamp with time zone, "workflow_id" text,
    "workflow_step_id" text, "result" jsonb, "error_message" text, "metadata" jsonb, "idempotency_key" text,
    "created_at" timestamp with time zone, "started_at" timestamp with time zone, "completed_at" timestamp with time
    zone, "progress" jsonb, "trace_context" jsonb, "unique_key" text, "expires_at" timestamp with time zone,
    "sequence_key" text, "sequence_halt" boolean, "fair_share" integer, "after_tenant" text) LANGUAGE plpgsql SET
    plan_cache_mode = force_generic_plan AS $claim$
#variable_conflict use_column
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    RETURN QUERY
WITH RECURSIVE queue AS (SELECT q.name FROM unnest($1::text[]) AS q(name)
                          WHERE NOT EXISTS (SELECT FROM queueflow.queue_settings AS s
                                             WHERE s.queue_name = q.name AND (paused OR concurrency_limit IS NOT
                                                 NULL OR key_concurrency_limit IS NOT NULL OR rate_jobs IS NOT
                                                 NULL))
                         OFFSET 0),
pending AS (
    SELECT queue.name AS queue_name, first.tenant_id, first.scheduled_at
      FROM queue,
           LATERAL (SELECT j.tenant_id, j.scheduled_at FROM queueflow.jobs AS j
                     WHERE j.queue_name = queue.name AND j.status IN ('pending', 'retrying') AND j.sequence_waiting
                         IS NOT TRUE
                     ORDER BY j.tenant_id, j.priority DESC, j.scheduled_at, j.created_at, j.id LIMIT 1) AS first
    UNION ALL
    SELECT pending.queue_name, next.tenant_id, next.scheduled_at
      FROM pending,
           LATERAL (SELECT j.tenant_id, j.scheduled_at FROM queueflow.jobs AS j
                     WHERE j.queue_name = pending.queue_name AND j.status IN ('pending', 'retrying') AND
                         j.sequence_waiting IS NOT TRUE
                       AND j.tenant_id > pending.tenant_id
                     ORDER BY j.tenant_id, j.priority DESC, j.scheduled_at, j.created_at, j.id LIMIT 1) AS next
),
tenant AS (
    SELECT pending.queue_name, pending.tenant_id FROM pending
     WHERE (pending.scheduled_at <= $3::timestamptz AND $5::text[] IS NULL)
        OR (SELECT true FROM queueflow.jobs AS j
             WHERE j.queue_name = pending.queue_name AND j.tenant_id = pending.tenant_id AND j.status IN ('pending',
                 'retrying') AND j.sequence_waiting IS NOT TRUE AND j.scheduled_at <= $3::timestamptz AND
                 (j.expires_at IS NULL OR j.expires_at > $3::timestamptz) AND ($5::text[] IS NULL OR j.task_name =
                 ANY($5::text[])) AND (j.sequence_key IS NULL OR (SELECT s.id FROM queueflow.jobs AS s
                    WHERE s.tenant_id = j.tenant_id AND s.sequence_key = j.sequence_key AND (s.status IN ('pending',
                        'retrying', 'running') OR (s.status = 'dead_letter' AND s.sequence_halt))
                    ORDER BY s.status <> 'running', s.id LIMIT 1) = j.id)
             ORDER BY j.priority DESC, j.scheduled_at, j.created_at, j.id LIMIT 1)
),
share AS (SELECT ceil($2::int::float8 / greatest(count(DISTINCT tenant_id), 1))::int AS per_tenant,
                 array_agg(queue_name) AS queue_names, array_agg(tenant_id) AS tenant_ids
            FROM tenant),
turn AS (SELECT (SELECT t.tenant_id FROM queueflow.claim_turns AS t WHERE t.queues = $6::text[]) AS after_tenant),
picked AS (
       SELECT c.id, c.tenant_id, c.nth, c.tenant_id COLLATE "C" <= turn.after_tenant AS wrapped
         FROM (SELECT due.id, due.tenant_id, share.per_tenant,
                      row_number() OVER (
                          PARTITION BY due.tenant_id
                          ORDER BY due.priority DESC, due.scheduled_at, due.created_at, due.id) AS nth
                 FROM share, unnest(share.queue_names, share.tenant_ids) AS tenant(queue_name, tenant_id),
                      LATERAL (SELECT * FROM (
                               SELECT j.id, j.tenant_id, j.priority, j.scheduled_at, j.created_at
                                 FROM queueflow.jobs AS j
                                WHERE j.queue_name = tenant.queue_name AND j.tenant_id = tenant.tenant_id
                                  AND j.status IN ('pending', 'retrying') AND j.sequence_waiting IS NOT TRUE AND
                                      j.scheduled_at <= $3::timestamptz AND (j.expires_at IS NULL OR j.expires_at >
                                      $3::timestamptz) AND ($5::text[] IS NULL OR j.task_name = ANY($5::text[])) AND
                                      (j.sequence_key IS NULL OR (SELECT s.id FROM queueflow.jobs AS s
                    WHERE s.tenant_id = j.tenant_id AND s.sequence_key = j.sequence_key AND (s.status IN ('pending',
                        'retrying', 'running') OR (s.status = 'dead_letter' AND s.sequence_halt))
                    ORDER BY s.status <> 'running', s.id LIMIT 1) = j.id)
                                ORDER BY j.priority DESC, j.scheduled_at, j.created_at, j.id
                                LIMIT $2::int
                                FOR UPDATE SKIP LOCKED) AS ahead
                                LIMIT share.per_tenant) AS due) AS c, turn
        WHERE c.nth <= c.per_tenant
        ORDER BY c.nth, wrapped, c.tenant_id COLLATE "C"
        LIMIT $2::int),
served AS (SELECT tenant_id FROM picked ORDER BY nth DESC, wrapped DESC, tenant_id COLLATE "C" DESC LIMIT 1),
free AS (SELECT t.queues FROM served, turn, queueflow.claim_turns AS t
           WHERE served.tenant_id <> turn.after_tenant
             AND t.queues = $6::text[] AND t.tenant_id = turn.after_tenant
             FOR UPDATE OF t SKIP LOCKED),
moved AS (UPDATE queueflow.claim_turns AS t SET tenant_id = served.tenant_id
            FROM free, served
           WHERE t.queues = free.queues),
born AS (INSERT INTO queueflow.claim_turns (queues, tenant_id)
         SELECT $6::text[], served.tenant_id FROM served, turn WHERE turn.after_tenant IS NULL
         ON CONFLICT DO NOTHING)
UPDATE queueflow.jobs
   SET status = 'running',
       lease_token = gen_random_uuid(),
       delivery_count = delivery_count + 1,
       started_at = $3::timestamptz,
       config = CASE WHEN started_at IS NULL THEN config
                     ELSE jsonb_set(config, '{started_before}', to_jsonb(started_at)) END,
       locked_until = LEAST($3::timestamptz + $4::interval, $3::timestamptz + make_interval(secs =>
           timeout_seconds))
 WHERE id = ANY(ARRAY(SELECT picked.id FROM picked))
RETURNING id, tenant_id, queue_name, task_name, payload, config, status, priority, scheduled_at, locked_until,
    lease_token, delivery_count, retry_count, max_retries, timeout_seconds, next_retry_at, workflow_id,
    workflow_step_id, result, error_message, metadata, idempotency_key, created_at, started_at, completed_at,
    progress, trace_context, unique_key, expires_at, sequence_key, sequence_halt, (SELECT per_tenant FROM share) AS
    fair_share, (SELECT after_tenant FROM turn) AS after_tenant
;
END
$claim$
"""

UPGRADE = [
    "ALTER TABLE queueflow.jobs ADD COLUMN sequence_waiting boolean",
    f"""
    UPDATE queueflow.jobs AS j SET sequence_waiting = true
     WHERE j.sequence_key IS NOT NULL AND j.status IN ('pending', 'retrying')
       AND EXISTS (SELECT FROM queueflow.jobs AS s
                    WHERE s.tenant_id = j.tenant_id AND s.sequence_key = j.sequence_key AND s.id < j.id
                      AND s.sequence_key IS NOT NULL AND {holding("s")})
    """,
    # idx_jobs_claim is kept for release 0.2.0's claims during a rolling deploy; the next release drops it (contract).
    """
    CREATE INDEX idx_jobs_claim_ready ON queueflow.jobs
           (queue_name, tenant_id, priority DESC, scheduled_at, created_at, id)
     WHERE status IN ('pending', 'retrying') AND sequence_waiting IS NOT TRUE
    """,
    "DROP INDEX queueflow.idx_jobs_sequence",
    "DROP INDEX queueflow.idx_jobs_sequence_running",
    "DROP INDEX queueflow.idx_jobs_sequence_key",
    f"""
    CREATE INDEX idx_jobs_sequence ON queueflow.jobs (tenant_id, sequence_key, (status <> 'running'), id)
     WHERE sequence_key IS NOT NULL AND {HOLDING}
    """,
    """
    CREATE INDEX idx_jobs_sequence_key ON queueflow.jobs (tenant_id, sequence_key)
     WHERE sequence_key IS NOT NULL AND status <> 'running'
    """,
    ENQUEUED,
    WAKE,
    ENDED,
    REPLAYED,
    """
    CREATE TRIGGER jobs_sequence_enqueued BEFORE INSERT ON queueflow.jobs
       FOR EACH ROW WHEN (NEW.sequence_key IS NOT NULL AND NEW.status IN ('pending', 'retrying'))
       EXECUTE FUNCTION queueflow.sequence_enqueued()
    """,
    f"""
    CREATE TRIGGER jobs_sequence_ended AFTER UPDATE ON queueflow.jobs
       FOR EACH ROW WHEN (OLD.sequence_key IS NOT NULL AND {holding("OLD")} AND NOT {holding("NEW")})
       EXECUTE FUNCTION queueflow.sequence_ended()
    """,
    f"""
    CREATE TRIGGER jobs_sequence_replayed BEFORE UPDATE ON queueflow.jobs
       FOR EACH ROW WHEN (NEW.sequence_waiting AND NOT {holding("OLD")} AND NEW.status IN ('pending', 'retrying'))
       EXECUTE FUNCTION queueflow.sequence_replayed()
    """,
    f"""
    CREATE TRIGGER jobs_sequence_deleted AFTER DELETE ON queueflow.jobs
       FOR EACH ROW WHEN (OLD.sequence_key IS NOT NULL AND {holding("OLD")})
       EXECUTE FUNCTION queueflow.sequence_ended()
    """,
    CLAIM_0021,
]

DOWNGRADE = [
    "DROP FUNCTION queueflow.claim_0021(text[], integer, timestamptz, interval, text[], text[])",
    "DROP TRIGGER jobs_sequence_deleted ON queueflow.jobs",
    "DROP TRIGGER jobs_sequence_ended ON queueflow.jobs",
    "DROP TRIGGER jobs_sequence_enqueued ON queueflow.jobs",
    "DROP TRIGGER jobs_sequence_replayed ON queueflow.jobs",
    "DROP FUNCTION queueflow.sequence_replayed()",
    "DROP FUNCTION queueflow.sequence_ended()",
    "DROP FUNCTION queueflow.sequence_wake(text, text, text)",
    "DROP FUNCTION queueflow.sequence_enqueued()",
    "DROP INDEX queueflow.idx_jobs_sequence_key",
    "DROP INDEX queueflow.idx_jobs_sequence",
    "DROP INDEX queueflow.idx_jobs_claim_ready",
    # 0018's indexes of sequences.
    """
    CREATE INDEX idx_jobs_sequence ON queueflow.jobs (tenant_id, sequence_key, id)
     WHERE sequence_key IS NOT NULL
       AND (status IN ('pending', 'retrying', 'running') OR (status = 'dead_letter' AND sequence_halt))
    """,
    """
    CREATE INDEX idx_jobs_sequence_running ON queueflow.jobs (tenant_id, sequence_key)
     WHERE sequence_key IS NOT NULL AND status = 'running'
    """,
    "CREATE INDEX idx_jobs_sequence_key ON queueflow.jobs (tenant_id, sequence_key) WHERE sequence_key IS NOT NULL",
    "ALTER TABLE queueflow.jobs DROP COLUMN sequence_waiting",
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
