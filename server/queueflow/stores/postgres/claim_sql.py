"""The claim's SQL on queues nobody restricts (`claim.py` runs it): fair across tenants, one statement.

The pieces both claims are built from (the lease written into a claimed job, the tenants in turn, each tenant's
share) take the placeholders of the statement they are part of; the restricted claim (`restricted_sql`) builds on
them with its own parameters.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, NamedTuple

from queueflow.stores.postgres.params import Placeholders, sql_types
from queueflow.stores.postgres.sql import COLUMNS, STARTED_BEFORE

# Rows of queueflow.queue_settings that restrict leasing: the predicate of idx_queue_settings_restricting.
RESTRICTING = "(paused OR concurrency_limit IS NOT NULL OR key_concurrency_limit IS NOT NULL OR rate_jobs IS NOT NULL)"

# Claim order within a tenant: idx_jobs_claim's order after (queue_name, tenant_id).
CLAIM_ORDER = "priority DESC, scheduled_at, created_at, id"
J_CLAIM_ORDER = "j.priority DESC, j.scheduled_at, j.created_at, j.id"


class ClaimArgs(NamedTuple):
    """What every claim statement takes first: up to `max_jobs` jobs of `queues` (of `task_names` only, if not
    NULL), due at `now`, leased for `lease`."""

    queues: Annotated[list[str], "text[]"]
    max_jobs: Annotated[int, "int"]
    now: Annotated[datetime, "timestamptz"]
    lease: Annotated[timedelta, "interval"]
    task_names: Annotated[list[str] | None, "text[]"]


class Turn(NamedTuple):
    """Whose turn it is (README.md, "Fairness"): tenants are served in code-point order from the first one after
    `after_tenant`, the one the previous claim served last (NULL: from the first). The restricted claim's; CLAIM
    reads the turn itself (`TurnOf`)."""

    after_tenant: Annotated[str | None, "text"]


class TurnOf(NamedTuple):
    """The set of queues whose turn a claim takes and moves: the lease's queues, sorted (`turn_of`), the key of
    their row in queueflow.claim_turns."""

    turn_of: Annotated[list[str], "text[]"]


class TenantScope(NamedTuple):
    """A tenant-scoped worker key's claim: `tenant`'s jobs only."""

    tenant: Annotated[str, "text"]


def lease(p: Placeholders) -> str:
    """What a claim writes into each job it takes. A lease never runs past the delivery's timeout (LEAST ignores a
    NULL timeout).

    A release (sql.RELEASE) puts the job back exactly as it was before this claim. Everything else it can derive
    (status from retry_count, delivery_count - 1; scheduled_at is left alone), but not the started_at this claim
    overwrites: an earlier delivery's start, if there was one. The claim keeps that one in the job's `config`
    (`STARTED_BEFORE`) rather than in a column of its own: no migration, and a first delivery (started_at NULL, the
    common case) writes config unchanged."""
    return f"""UPDATE queueflow.jobs
   SET status = 'running',
       lease_token = gen_random_uuid(),
       delivery_count = delivery_count + 1,
       started_at = {p.now},
       config = CASE WHEN started_at IS NULL THEN config
                     ELSE jsonb_set(config, '{{{STARTED_BEFORE}}}', to_jsonb(started_at)) END,
       locked_until = LEAST({p.now} + {p.lease}, {p.now} + make_interval(secs => timeout_seconds))"""


def claimable(p: Placeholders) -> str:
    """A job any claim may take: due, of the tasks a worker can run."""
    return (
        f"j.status IN ('pending', 'retrying') AND j.scheduled_at <= {p.now}"
        f" AND ({p.task_names} IS NULL OR j.task_name = ANY({p.task_names}))"
    )


def tenants_in_turn(p: Placeholders, queues: str, claimable: str, first_claimable: str = "false") -> str:
    """The CTEs a fair claim starts with (README.md, "Fairness"): `tenant`, every (queue_name, tenant_id) of the
    queues `queues` (a query of one column, `name`) with a job that `claimable` (a condition on `j`) holds for, and
    `share`, how many of `max_jobs` each tenant gets if all have enough: ceil(max_jobs / tenants).

    The tenants are found by a skip scan of idx_jobs_claim (queue_name, tenant_id, …): one index descent per tenant
    with pending or retrying jobs, each for the next tenant_id after the previous one, however many jobs each holds
    — then kept if one of its jobs is claimable, which reads its jobs in claim order until the first one that is.
    Written so that no plan does otherwise: each subquery orders by the whole index order, which no other index
    gives (ordered by `tenant_id` alone, a generic plan walked idx_jobs_tenant_created filtering the queue, and an
    unordered check scanned the table), and the claimable check is a LIMIT 1 subquery, run per tenant (as EXISTS,
    the planner made it a semi-join over every due row).

    `first_claimable` (a condition on `pending.scheduled_at`, the tenant's first row in index order) spares that
    check when it holds: in a backlog a tenant's first pending job is usually due, and one probe per tenant fewer
    was a quarter of a 100-tenant claim (7.5 → 5.6 ms per claim of 100, measured).
    """
    return f"""
WITH RECURSIVE queue AS ({queues}),
pending AS (
    SELECT queue.name AS queue_name, first.tenant_id, first.scheduled_at
      FROM queue,
           LATERAL (SELECT j.tenant_id, j.scheduled_at FROM queueflow.jobs AS j
                     WHERE j.queue_name = queue.name AND j.status IN ('pending', 'retrying')
                     ORDER BY j.tenant_id, {J_CLAIM_ORDER} LIMIT 1) AS first
    UNION ALL
    SELECT pending.queue_name, next.tenant_id, next.scheduled_at
      FROM pending,
           LATERAL (SELECT j.tenant_id, j.scheduled_at FROM queueflow.jobs AS j
                     WHERE j.queue_name = pending.queue_name AND j.status IN ('pending', 'retrying')
                       AND j.tenant_id > pending.tenant_id
                     ORDER BY j.tenant_id, {J_CLAIM_ORDER} LIMIT 1) AS next
),
tenant AS (
    SELECT pending.queue_name, pending.tenant_id FROM pending
     WHERE {first_claimable}
        OR (SELECT true FROM queueflow.jobs AS j
             WHERE j.queue_name = pending.queue_name AND j.tenant_id = pending.tenant_id AND {claimable}
             ORDER BY {J_CLAIM_ORDER} LIMIT 1)
),
share AS (SELECT ceil({p.max_jobs}::float8 / greatest(count(DISTINCT tenant_id), 1))::int AS per_tenant,
                 array_agg(queue_name) AS queue_names, array_agg(tenant_id) AS tenant_ids
            FROM tenant)"""


def shares(p: Placeholders, columns: str, claimable: str) -> str:
    """`due`: for each (queue, tenant) of `tenants_in_turn`, its `columns` of up to `share.per_tenant` jobs that
    `claimable` holds for, locked, read off idx_jobs_claim in claim order past the rows other claimers hold.

    The inner LIMIT max_jobs changes nothing (a share is at most that) but gives the planner a bound: under a LIMIT
    it cannot evaluate, it estimates a tenth of the index's rows per tenant, and on a backlog of 100,000 jobs the
    claim's estimated cost passed jit_above_cost, so that PostgreSQL compiled it on every execution.
    """
    return f"""share, unnest(share.queue_names, share.tenant_ids) AS tenant(queue_name, tenant_id),
                      LATERAL (SELECT * FROM (
                               SELECT {columns}
                                 FROM queueflow.jobs AS j
                                WHERE j.queue_name = tenant.queue_name AND j.tenant_id = tenant.tenant_id
                                  AND {claimable}
                                ORDER BY {J_CLAIM_ORDER}
                                LIMIT {p.max_jobs}
                                FOR UPDATE SKIP LOCKED) AS ahead
                                LIMIT share.per_tenant) AS due"""


def turn_moved(turn_of: str) -> str:
    """The CTEs that move the turn of the queues `turn_of` (README.md, "Fairness") from `turn.after_tenant`, the
    turn the claim read, to `served.tenant_id` (`turn` and `served`: CTEs of one row; no row in `served`: nothing
    moves), written so that no claim ever waits for another: `free` locks the turn's row only when it is to change,
    and skips it when another claim holds it (SKIP LOCKED), so that claim's turn stands; its compare-and-set leaves
    a turn another claim has moved since this one read it. `born` writes the row on the first claim of these
    queues (ON CONFLICT DO NOTHING: two first claims keep one turn).

    While one tenant is due the turn never changes, and these read nothing more (the claim read the turn).

    Why fairness holds across processes: a claim reads the turn committed before it began, in whichever process,
    so leases that follow each other (each begins after the one before it committed: the rule's "run of
    single-job leases", however many processes take part) see each other's turn, and the rule holds exactly.
    Claims that overlap read the same turn and serve the same next tenant (different jobs: SKIP LOCKED), as
    concurrent leases always did within one process; of them, the first to move the turn moves it (from the value
    they read to that tenant), and the others find its row locked or already moved, and leave it. So the turn
    moves one tenant at a time, in the turn's order, never back and never past a tenant: each tenant is served in
    every k moves, and between two moves only claims overlapping the one that moved it commit — with c claims in
    flight, about every c·k leases (tests/postgres/test_shared_turn.py). No claim waits: a claim locks the turn's
    row only to move it, and skips it when another holds it."""
    return f"""free AS (SELECT t.queues FROM served, turn, queueflow.claim_turns AS t
           WHERE served.tenant_id <> turn.after_tenant
             AND t.queues = {turn_of} AND t.tenant_id = turn.after_tenant
             FOR UPDATE OF t SKIP LOCKED),
moved AS (UPDATE queueflow.claim_turns AS t SET tenant_id = served.tenant_id
            FROM free, served
           WHERE t.queues = free.queues),
born AS (INSERT INTO queueflow.claim_turns (queues, tenant_id)
         SELECT {turn_of}, served.tenant_id FROM served, turn WHERE turn.after_tenant IS NULL
         ON CONFLICT DO NOTHING)"""


# A claim's transaction starts with two settings, in one round trip (a simple query of three statements; asyncpg's
# transaction() and then a SET took two): a claim costs BEGIN+SETs, the claim, COMMIT — three round trips. SET LOCAL
# ends with the transaction, so no session state leaks to a transaction-mode pooler's next client.
#
# Generic plans: under the default plan_cache_mode PostgreSQL never keeps the claim's generic plan: a LIMIT it
# cannot evaluate and the task filter it cannot fold make its estimate several times the custom plan's, so it
# planned the claim anew on every execution, longer than running it (0.9 of a single-job lease's 1.6 ms,
# measured). The generic plans are the ones tests/postgres/test_claim_plan.py checks.
#
# An asynchronous commit: were PostgreSQL to crash before the WAL flush (a fraction of a second later), the claim
# would be lost and the job pending again, as when a lease expires (with the rate-limit tokens it spent, and the key
# turn it moved: the whole claim is one transaction); the worker's ack would then answer lease_lost, and the job
# runs again (at-least-once, as after any crash). Any later synchronous commit (the job's own completion, for one)
# flushes it first. The flush was half of a one-job claim's time (COMMIT 0.87 of 2.3 ms, measured; a round trip was
# 0.47). Enqueues and acks keep synchronous commits.
BEGIN_CLAIM = "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL synchronous_commit = off"

_claim = Placeholders(ClaimArgs, TurnOf)
_CANDIDATE = "j.id, j.tenant_id, j.priority, j.scheduled_at, j.created_at"

# The claim of queues nobody restricts. Every queue on which some tenant restricts leasing is left out (one probe
# of idx_queue_settings_restricting per queue, which finds nothing on a queue nobody configured); those queues
# are claimed by CLAIM_RESTRICTED, under the settings rows' locks (`claim.claim_restricted`).
# OFFSET 0 is an optimisation fence: without it the planner ran the probe after the LATERAL scan, which had
# already locked (and then discarded) a restricted queue's candidates, hiding them from CLAIM_RESTRICTED.
_UNRESTRICTED_QUEUES = f"""SELECT q.name FROM unnest({_claim.queues}) AS q(name)
                          WHERE NOT EXISTS (SELECT FROM queueflow.queue_settings AS s
                                             WHERE s.queue_name = q.name AND {RESTRICTING})
                         OFFSET 0"""

# The claim, fair across tenants (README.md, "Fairness"). For each (queue, tenant) with a claimable job
# (`tenants_in_turn`), the LATERAL subquery reads idx_jobs_claim in claim order, skips rows another claimer holds
# and stops after the tenant's share; of a tenant's candidates from all its queues, its first `share` are its next
# jobs in claim order (`nth`, across the queues), and of those the claim takes `max_jobs` in turns (`picked`): each
# tenant's first, tenant after tenant starting after the turn's tenant in code-point order, then each one's second,
# and so on, as `core.turns.in_turns` orders them. A tenant that has fewer jobs than its share leaves the claim
# short; it comes back with `fair_share` so that the store can claim the rest from the tenants that filled theirs
# (`claim._claim_in_turns`). With one tenant and one queue the share is `max_jobs`: one statement.
# The turn is the database's, one for every process (`turn`: the tenant the last claim of these queues served
# last, read from queueflow.claim_turns; moved to the last tenant `picked` serves by `turn_moved`), and comes back
# as `after_tenant` for the store to order the claimed rows by.
# Candidates cut by the outer LIMIT stay locked only until this statement commits. `id = ANY(ARRAY(...))` keeps
# even a generic plan (whose LIMIT is a guess) on the primary key instead of a hash join over the table.
# A tenant's first row in index order is claimable when it is due and no task filter applies.
CLAIM = f"""{
    tenants_in_turn(
        _claim,
        _UNRESTRICTED_QUEUES,
        claimable(_claim),
        f"(pending.scheduled_at <= {_claim.now} AND {_claim.task_names} IS NULL)",
    )
},
turn AS (SELECT (SELECT t.tenant_id FROM queueflow.claim_turns AS t WHERE t.queues = {_claim.turn_of}) AS after_tenant),
picked AS (
       SELECT c.id, c.tenant_id, c.nth, c.tenant_id COLLATE "C" <= turn.after_tenant AS wrapped
         FROM (SELECT due.id, due.tenant_id, share.per_tenant,
                      row_number() OVER (
                          PARTITION BY due.tenant_id
                          ORDER BY due.priority DESC, due.scheduled_at, due.created_at, due.id) AS nth
                 FROM {shares(_claim, _CANDIDATE, claimable(_claim))}) AS c, turn
        WHERE c.nth <= c.per_tenant
        ORDER BY c.nth, wrapped, c.tenant_id COLLATE "C"
        LIMIT {_claim.max_jobs}),
served AS (SELECT tenant_id FROM picked ORDER BY nth DESC, wrapped DESC, tenant_id COLLATE "C" DESC LIMIT 1),
{turn_moved(_claim.turn_of)}
{lease(_claim)}
 WHERE id = ANY(ARRAY(SELECT picked.id FROM picked))
RETURNING {COLUMNS}, (SELECT per_tenant FROM share) AS fair_share, (SELECT after_tenant FROM turn) AS after_tenant
"""

# The claim in one round trip, where its transaction took three (BEGIN_CLAIM, CLAIM, COMMIT): CLAIM wrapped in a
# function of the session (pg_temp: made by each pooled connection as it opens, from this code's own CLAIM, so it
# can never lag behind it; no migration), called as a statement of its own. One statement is atomic without a
# transaction block; the function carries the claim's two settings: plan_cache_mode as its SET clause, in force
# while the claim is planned and run (PL/pgSQL keeps the generic plan, as BEGIN_CLAIM made PostgreSQL keep
# CLAIM's), and synchronous_commit set for the rest of the transaction (set_config's is_local), so that the
# statement's own commit is asynchronous. `columns` are CLAIM's result columns with their types
# (`claim.claim_columns`); #variable_conflict keeps their names (the function's OUT parameters) from shadowing
# the tables' columns inside CLAIM.
CLAIM_FUNCTION = "pg_temp.queueflow_claim"


def claim_function_ddl(columns: list[tuple[str, str]]) -> str:
    """CREATE FUNCTION for CLAIM_FUNCTION, returning CLAIM's `columns` (name, type)."""
    returns = ", ".join(f'"{name}" {sql_type}' for name, sql_type in columns)
    return f"""CREATE OR REPLACE FUNCTION {CLAIM_FUNCTION}({", ".join(sql_types(ClaimArgs, TurnOf))})
RETURNS TABLE ({returns}) LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $claim$
#variable_conflict use_column
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    RETURN QUERY {CLAIM};
END
$claim$"""


_CLAIM_ARGS = ", ".join(getattr(_claim, name) for name in ClaimArgs._fields + TurnOf._fields)
CLAIM_CALL = f"SELECT * FROM {CLAIM_FUNCTION}({_CLAIM_ARGS})"

_for_tenant = Placeholders(ClaimArgs, TenantScope)

# The claim of a tenant-scoped worker key: one tenant, so no turns; per queue, that tenant's range of idx_jobs_claim
# in claim order.
CLAIM_FOR_TENANT = f"""
{lease(_for_tenant)}
 WHERE id = ANY(ARRAY(
       SELECT due.id
         FROM (SELECT q.name FROM unnest({_for_tenant.queues}) AS q(name)
                WHERE NOT EXISTS (SELECT FROM queueflow.queue_settings AS s
                                   WHERE s.queue_name = q.name AND {RESTRICTING})
               OFFSET 0) AS queue,
              LATERAL (SELECT j.id, j.priority, j.scheduled_at, j.created_at FROM queueflow.jobs AS j
                        WHERE j.queue_name = queue.name AND j.tenant_id = {_for_tenant.tenant}
                          AND {claimable(_for_tenant)}
                        ORDER BY {J_CLAIM_ORDER}
                        LIMIT {_for_tenant.max_jobs}
                        FOR UPDATE SKIP LOCKED) AS due
        ORDER BY due.priority DESC, due.scheduled_at, due.created_at, due.id
        LIMIT {_for_tenant.max_jobs}))
RETURNING {COLUMNS}
"""

# Whether any job of the queues $1 is due at $2, whatever its tenant, its task or its queue's restrictions: a claim of
# those queues can take a job only if one is. One statement and no transaction, where a claim that finds nothing
# takes four round trips (BEGIN, CLAIM, RESTRICTED_QUEUES, COMMIT): a lessee that found nothing asks this first
# (`claim.PostgresClaims`), as an idle worker polling an empty queue does again and again. Each queue's pending
# range of idx_jobs_claim, read until its first due row.
DUE_ANY = """
SELECT EXISTS (SELECT FROM unnest($1::text[]) AS queue(name),
                   LATERAL (SELECT FROM queueflow.jobs AS j
                             WHERE j.queue_name = queue.name AND j.status IN ('pending', 'retrying')
                               AND j.scheduled_at <= $2
                             LIMIT 1) AS due)
"""

# Which of the queues $1 some tenant restricts (CLAIM left them out): a short claim claims from these next, after
# the turn of the lease's queues $2 (`TurnOf`), read beside them for a claim that took nothing before.
RESTRICTED_QUEUES = f"""
SELECT DISTINCT queue_name, (SELECT tenant_id FROM queueflow.claim_turns WHERE queues = $2::text[]) AS after_tenant
  FROM queueflow.queue_settings WHERE queue_name = ANY($1::text[]) AND {RESTRICTING}
"""

# The turn of the lease's queues $1 moved to the tenant $2 a claim of restricted queues served last, as CLAIM
# moves it (`turn_moved`), in the claim's transaction.
SAVE_TURN = f"""
WITH turn AS (SELECT (SELECT tenant_id FROM queueflow.claim_turns WHERE queues = $1::text[]) AS after_tenant),
served AS (SELECT $2::text AS tenant_id),
{turn_moved("$1::text[]")}
SELECT
"""

# The earliest time a job of `queues` becomes claimable after now: per queue, the first row of idx_jobs_due
# after now (the claim index, ordered by priority first, cannot answer this without reading every row). That
# index holds only the jobs written ahead of their time (`scheduled_at > created_at`, see migration 0005): a job
# due when it was written is never due after now, unless a clock behind the one that wrote it reads it.
# Beside it, in the same round trip (an idle lessee asks after every empty claim), the token buckets of those
# queues' rate limits, whose next token may come sooner: one row each, or one row of nulls when none has a rate.
NEXT_DUE = """
SELECT (SELECT min(due.scheduled_at)
          FROM unnest($1::text[]) AS queue(name),
               LATERAL (SELECT scheduled_at FROM queueflow.jobs
                         WHERE queue_name = queue.name AND status IN ('pending', 'retrying') AND scheduled_at > $2
                           AND scheduled_at > created_at
                         ORDER BY scheduled_at
                         LIMIT 1) AS due) AS due,
       bucket.rate_jobs, bucket.rate_per_seconds, bucket.rate_tokens, bucket.rate_refilled_at
  FROM (VALUES (1)) AS one(row)
  LEFT JOIN queueflow.queue_settings AS bucket
         ON bucket.queue_name = ANY($1::text[]) AND bucket.rate_jobs IS NOT NULL AND NOT bucket.paused
"""
