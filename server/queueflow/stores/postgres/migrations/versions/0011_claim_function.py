"""The one-statement claim as a function of the database (`stores.postgres.claim.function`): CLAIM wrapped in a
function that carries the claim's settings, called as a statement of its own, one round trip where the claim's
transaction takes three.

Until this revision every pooled connection made it as it opened, in pg_temp, from the server's own CLAIM: a CREATE
FUNCTION per session (26.0 ms to open a connection instead of 9.3), and no function at all for a role without
TEMPORARY or behind a transaction-mode pooler. Here it is made once, with the text of the CLAIM that shipped with
this revision, under a name of the revision's own: a later change to CLAIM makes a new function beside this one (a
server of the previous release goes on calling its own during a rolling deploy), and the release after drops this
one. The test tests/postgres/test_claim_function.py fails when the code's CLAIM no longer matches the function its
server calls.

Expand-only: a new function, which a server of revision 0010 never calls (it makes its own, in pg_temp).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The claim function of revision 0011: `claim.function.claim_function_ddl` of CLAIM as it shipped, its lines
# wrapped (whitespace is all that differs).
UPGRADE = [
    """
CREATE FUNCTION queueflow.claim_0011(text[], int, timestamptz, interval, text[], text[])
RETURNS TABLE ("id" text, "tenant_id" text, "queue_name" text, "task_name" text, "payload" jsonb, "config" jsonb,
    "status" text, "priority" integer, "scheduled_at" timestamp with time zone, "locked_until" timestamp with
        time zone, "lease_token" uuid, "delivery_count" integer, "retry_count" integer, "max_retries" integer,
            "timeout_seconds" double precision, "next_retry_at" timestamp with time zone, "workflow_id" text,
                "workflow_step_id" text, "result" jsonb, "error_message" text, "metadata" jsonb,
                    "idempotency_key" text, "created_at" timestamp with time zone, "started_at" timestamp with
                        time zone, "completed_at" timestamp with time zone, "progress" jsonb, "trace_context"
                            jsonb, "fair_share" integer, "after_tenant" text) LANGUAGE plpgsql SET
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
                     WHERE j.queue_name = queue.name AND j.status IN ('pending', 'retrying')
                     ORDER BY j.tenant_id, j.priority DESC, j.scheduled_at, j.created_at, j.id LIMIT 1) AS first
    UNION ALL
    SELECT pending.queue_name, next.tenant_id, next.scheduled_at
      FROM pending,
           LATERAL (SELECT j.tenant_id, j.scheduled_at FROM queueflow.jobs AS j
                     WHERE j.queue_name = pending.queue_name AND j.status IN ('pending', 'retrying')
                       AND j.tenant_id > pending.tenant_id
                     ORDER BY j.tenant_id, j.priority DESC, j.scheduled_at, j.created_at, j.id LIMIT 1) AS next
),
tenant AS (
    SELECT pending.queue_name, pending.tenant_id FROM pending
     WHERE (pending.scheduled_at <= $3::timestamptz AND $5::text[] IS NULL)
        OR (SELECT true FROM queueflow.jobs AS j
             WHERE j.queue_name = pending.queue_name AND j.tenant_id = pending.tenant_id AND j.status IN
                 ('pending', 'retrying') AND j.scheduled_at <= $3::timestamptz AND ($5::text[] IS NULL OR
                     j.task_name = ANY($5::text[]))
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
                                  AND j.status IN ('pending', 'retrying') AND j.scheduled_at <= $3::timestamptz
                                      AND ($5::text[] IS NULL OR j.task_name = ANY($5::text[]))
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
            progress, trace_context, (SELECT per_tenant FROM share) AS fair_share, (SELECT after_tenant FROM
                turn) AS after_tenant
;
END
$claim$
""",
]

DOWNGRADE = ["DROP FUNCTION queueflow.claim_0011(text[], integer, timestamptz, interval, text[], text[])"]


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
