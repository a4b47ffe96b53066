"""A claim whose cost does not grow with dead tuples (issue 42): the claim index split by a generation column.

Under a held xmin horizon (an idle-in-transaction connection, a long report) VACUUM may not remove the pending
versions of the jobs claims took, and every claim walked all of their entries at the front of idx_jobs_claim_ready's
ranges, twice (the tenant skip scan and the share): 600,003 index tuples for a 1-job lease after 300,000 jobs
(bench/results/2026-12-07-claim-under-horizon.md). Here each job still to start carries the generation it became
ready in, the claim's index leads with it, and a claim reads only the live generations: a generation is retired once
it holds no ready job and no writer can still add one, and its dead entries are never read again.

- `queueflow.claim_generations`: the registry. Generation 0 holds the jobs written due later than a lookahead
  (delayed jobs, retries with a backoff, stragglers: `stores.postgres.generations`), never retired; the highest
  generation is the current one, which writers write. The janitor opens the next one, closes the previous one and
  retires closed, empty ones (`stores.postgres.generations`).
- `jobs.gen`: added with a constant default (no rewrite; every existing job is in generation 1, the current one),
  then defaulted to `queueflow.current_generation()`, so that a writer that does not know the column (release 0.2.0,
  `queueflow.enqueue`, any SQL) writes the current generation. The store's inserts write it themselves, once per
  statement (`sql.GENERATION`), and 0 for a job due later than the lookahead.
- `jobs_written_ready`: a BEFORE UPDATE row trigger whose WHEN (the job becomes ready: the index's predicate,
  false before and true after) is evaluated in C, so that claims, completions and heartbeats never run its
  function. Every path that makes a job ready again (release, retry, the janitor's reclaim, replay, a sequence's
  wake, a resume, 0.2.0's own writers) writes the current generation (0 when due later than the lookahead). Named so
  that it fires after jobs_sequence_replayed (BEFORE triggers fire in name order), which clears
  `sequence_waiting` on a replay: its WHEN sees that NEW.
- `idx_jobs_claim_gen` replaces idx_jobs_claim_ready (0021, unreleased): the same columns and predicate after `gen`.
  idx_jobs_claim stays for release 0.2.0's claims (expand, then contract). Built inside the migration's transaction,
  as 0020 built its index: writes to `jobs` wait for the build. On a large table build it first without blocking
  writes (`CREATE INDEX CONCURRENTLY idx_jobs_claim_gen ...` as below, after adding the column) and the migration
  takes it as built (an invalid one is dropped and built again here).
- The claim changes, so it is made anew as `queueflow.claim_0022`; `claim_0021` stays for a server of revision 0021
  (it no longer has its index: slower, still exact).

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-07
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path

from alembic import context, op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

READY = "status COLLATE \"C\" IN ('pending', 'retrying') AND sequence_waiting IS NOT TRUE"


def ready(row: str) -> str:
    """Whether the job `row` (OLD or NEW) is in idx_jobs_claim_gen, never NULL."""
    return f"({row}.status IN ('pending', 'retrying') AND {row}.sequence_waiting IS NOT TRUE)"


# LOOKAHEAD of stores.postgres.generations: a job due later than this is parked in generation 0.
WRITTEN_READY = r"""
CREATE FUNCTION queueflow.job_written_ready() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
    NEW.gen := CASE WHEN NEW.scheduled_at > clock_timestamp() + interval '5 seconds' THEN 0
                    ELSE (SELECT max(g.gen) FROM queueflow.claim_generations AS g) END;
    RETURN NEW;
END
$fn$
"""


def _revision_0018_enqueue() -> str:
    """`queueflow.enqueue` as revision 0018 made it (its text is pinned there: tests/postgres/test_schema.py)."""
    spec = importlib.util.spec_from_file_location(
        "queueflow_migration_0018", Path(__file__).with_name("0018_sequences.py")
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text: str = module.ENQUEUE
    return text.replace("CREATE FUNCTION queueflow.enqueue(", "CREATE OR REPLACE FUNCTION queueflow.enqueue(", 1)


# `queueflow.enqueue` writes the generation as the store's inserts do (`sql.generation`): 0 for a job due later
# than the lookahead, which would otherwise keep the current generation live until rotation parks it. The same
# signature, so replaced in place (its grants stay); the downgrade puts 0018's text back.
ENQUEUE_0018 = _revision_0018_enqueue()
_INSERTED = """created_at, unique_key, expires_at, sequence_key, sequence_halt)"""
_VALUES = """CASE WHEN seq_key IS NOT NULL THEN seq_on_failure = 'halt' END)
        ON CONFLICT"""
assert ENQUEUE_0018.count(_INSERTED) == 1
assert ENQUEUE_0018.count(_VALUES) == 1
ENQUEUE = ENQUEUE_0018.replace(_INSERTED, _INSERTED[:-1] + ", gen)").replace(
    _VALUES,
    """CASE WHEN seq_key IS NOT NULL THEN seq_on_failure = 'halt' END,
                CASE WHEN scheduled > created + interval '5 seconds' THEN 0
                     ELSE (SELECT max(g.gen) FROM queueflow.claim_generations AS g) END)
        ON CONFLICT""",
)

CLAIM_0022 = r"""
CREATE FUNCTION queueflow.claim_0022(text[], int, timestamptz, interval, text[], text[])
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
WITH RECURSIVE queue AS (SELECT named.name, live.gen FROM (SELECT q.name FROM unnest($1::text[]) AS q(name)
                          WHERE NOT EXISTS (SELECT FROM queueflow.queue_settings AS s
                                             WHERE s.queue_name = q.name AND (paused OR concurrency_limit IS NOT
                                                 NULL OR key_concurrency_limit IS NOT NULL OR rate_jobs IS NOT
                                                 NULL))
                         OFFSET 0) AS named, (SELECT live.gen FROM queueflow.live_generations() AS live(gen)) AS
                             live),
pending AS (
    SELECT queue.name AS queue_name, queue.gen, first.tenant_id, first.scheduled_at
      FROM queue,
           LATERAL (SELECT j.tenant_id, j.scheduled_at FROM queueflow.jobs AS j
                     WHERE j.gen = queue.gen AND j.queue_name = queue.name AND j.status COLLATE "C" IN ('pending',
                         'retrying') AND j.sequence_waiting IS NOT TRUE
                     ORDER BY j.tenant_id, j.priority DESC, j.scheduled_at, j.created_at, j.id LIMIT 1) AS first
    UNION ALL
    SELECT pending.queue_name, pending.gen, next.tenant_id, next.scheduled_at
      FROM pending,
           LATERAL (SELECT j.tenant_id, j.scheduled_at FROM queueflow.jobs AS j
                     WHERE j.gen = pending.gen AND j.queue_name = pending.queue_name AND j.status COLLATE "C" IN
                         ('pending', 'retrying') AND j.sequence_waiting IS NOT TRUE
                       AND j.tenant_id > pending.tenant_id
                     ORDER BY j.tenant_id, j.priority DESC, j.scheduled_at, j.created_at, j.id LIMIT 1) AS next
),
tenant AS (
    SELECT pending.queue_name, pending.gen, pending.tenant_id FROM pending
     WHERE (pending.scheduled_at <= $3::timestamptz AND $5::text[] IS NULL)
        OR (SELECT true FROM queueflow.jobs AS j
             WHERE j.gen = pending.gen AND j.queue_name = pending.queue_name AND j.tenant_id = pending.tenant_id
               AND j.status COLLATE "C" IN ('pending', 'retrying') AND j.sequence_waiting IS NOT TRUE AND
                   j.scheduled_at <= $3::timestamptz AND (j.expires_at IS NULL OR j.expires_at > $3::timestamptz)
                   AND ($5::text[] IS NULL OR j.task_name = ANY($5::text[])) AND (j.sequence_key IS NULL OR (SELECT
                   s.id FROM queueflow.jobs AS s
                    WHERE s.tenant_id = j.tenant_id AND s.sequence_key = j.sequence_key AND (s.status IN ('pending',
                        'retrying', 'running') OR (s.status = 'dead_letter' AND s.sequence_halt))
                    ORDER BY s.status <> 'running', s.id LIMIT 1) = j.id)
             ORDER BY j.priority DESC, j.scheduled_at, j.created_at, j.id LIMIT 1)
),
share AS (SELECT ceil($2::int::float8 / greatest(count(DISTINCT tenant_id), 1))::int AS per_tenant,
                 array_agg(queue_name) AS queue_names, array_agg(gen) AS gens, array_agg(tenant_id) AS tenant_ids
            FROM tenant),
turn AS (SELECT (SELECT t.tenant_id FROM queueflow.claim_turns AS t WHERE t.queues = $6::text[]) AS after_tenant),
picked AS (
       SELECT c.id, c.tenant_id, c.nth, c.tenant_id COLLATE "C" <= turn.after_tenant AS wrapped
         FROM (SELECT due.id, due.tenant_id, share.per_tenant,
                      row_number() OVER (
                          PARTITION BY due.tenant_id
                          ORDER BY due.priority DESC, due.scheduled_at, due.created_at, due.id) AS nth
                 FROM share, unnest(share.queue_names, share.gens, share.tenant_ids) AS tenant(queue_name, gen,
                     tenant_id),
                      LATERAL (SELECT * FROM (
                               SELECT j.id, j.tenant_id, j.priority, j.scheduled_at, j.created_at
                                 FROM queueflow.jobs AS j
                                WHERE j.gen = tenant.gen AND j.queue_name = tenant.queue_name
                                  AND j.tenant_id = tenant.tenant_id
                                  AND j.status COLLATE "C" IN ('pending', 'retrying') AND j.sequence_waiting IS NOT
                                      TRUE AND j.scheduled_at <= $3::timestamptz AND (j.expires_at IS NULL OR
                                      j.expires_at > $3::timestamptz) AND ($5::text[] IS NULL OR j.task_name =
                                      ANY($5::text[])) AND (j.sequence_key IS NULL OR (SELECT s.id FROM
                                      queueflow.jobs AS s
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
    """
    CREATE TABLE queueflow.claim_generations (
        gen integer PRIMARY KEY,
        opened_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        closed_at timestamptz
    )
    """,
    "INSERT INTO queueflow.claim_generations (gen) VALUES (0), (1)",
    """
    CREATE FUNCTION queueflow.current_generation() RETURNS integer LANGUAGE sql STABLE
    AS 'SELECT max(gen) FROM queueflow.claim_generations'
    """,
    # The claims' read of the registry (`claim.fair_sql.LIVE_GENERATIONS`): PL/pgSQL, so that it is not inlined and
    # the planner takes its ROWS, not the table's statistics (the claims' plans are costed as on one generation).
    """
    CREATE FUNCTION queueflow.live_generations() RETURNS SETOF integer LANGUAGE plpgsql STABLE ROWS 1
    AS 'BEGIN RETURN QUERY SELECT g.gen FROM queueflow.claim_generations AS g; END'
    """,
    "ALTER TABLE queueflow.jobs ADD COLUMN IF NOT EXISTS gen integer NOT NULL DEFAULT 1",
    "ALTER TABLE queueflow.jobs ALTER COLUMN gen SET DEFAULT queueflow.current_generation()",
    """
    DO $$
    BEGIN
        IF EXISTS (SELECT FROM pg_index WHERE indexrelid = to_regclass('queueflow.idx_jobs_claim_gen')
                                         AND NOT indisvalid) THEN
            DROP INDEX queueflow.idx_jobs_claim_gen;
        END IF;
    END $$
    """,
    f"""
    CREATE INDEX IF NOT EXISTS idx_jobs_claim_gen ON queueflow.jobs
           (gen, queue_name, tenant_id, priority DESC, scheduled_at, created_at, id)
     WHERE {READY}
    """,
    "DROP INDEX queueflow.idx_jobs_claim_ready",
    WRITTEN_READY,
    f"""
    CREATE TRIGGER jobs_written_ready BEFORE UPDATE ON queueflow.jobs
       FOR EACH ROW WHEN ({ready("NEW")} AND NOT {ready("OLD")})
       EXECUTE FUNCTION queueflow.job_written_ready()
    """,
    ENQUEUE,
    CLAIM_0022,
]

DOWNGRADE = [
    ENQUEUE_0018,
    "DROP FUNCTION queueflow.claim_0022(text[], integer, timestamptz, interval, text[], text[])",
    "DROP TRIGGER jobs_written_ready ON queueflow.jobs",
    "DROP FUNCTION queueflow.job_written_ready()",
    # 0021's, as it built it.
    """
    CREATE INDEX idx_jobs_claim_ready ON queueflow.jobs
           (queue_name, tenant_id, priority DESC, scheduled_at, created_at, id)
     WHERE status IN ('pending', 'retrying') AND sequence_waiting IS NOT TRUE
    """,
    "DROP INDEX queueflow.idx_jobs_claim_gen",
    "ALTER TABLE queueflow.jobs DROP COLUMN gen",
    "DROP FUNCTION queueflow.live_generations()",
    "DROP FUNCTION queueflow.current_generation()",
    "DROP TABLE queueflow.claim_generations",
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
