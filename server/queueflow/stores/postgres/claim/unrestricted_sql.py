"""The claim's SQL on queues nobody restricts (`claims.PostgresClaims` runs it): the claim's transaction
(BEGIN_CLAIM), the claim itself, fair across tenants in one statement (CLAIM, or CLAIM_FOR_TENANT for a
tenant-scoped worker key), and the small questions around it: is anything due at all (DUE_ANY), which queues does
some tenant restrict (RESTRICTED_QUEUES), the turn a restricted claim moved (SAVE_TURN), and when will something
be due (NEXT_DUE).
"""

from __future__ import annotations

from queueflow.stores.postgres.claim.args import ClaimArgs, TenantScope, TurnOf
from queueflow.stores.postgres.claim.fair_sql import (
    J_CLAIM_ORDER,
    LIVE_GENERATIONS,
    READY,
    RESTRICTING,
    claimable,
    lease,
    shares,
    tenants_in_turn,
    turn_moved,
)
from queueflow.stores.postgres.params import Placeholders
from queueflow.stores.postgres.sql import COLUMNS

# A claim's transaction starts with its settings, in one round trip (a simple query of four statements; asyncpg's
# transaction() and then a SET took two): a claim costs BEGIN+SETs, the claim, COMMIT — three round trips. SET LOCAL
# ends with the transaction, so no session state leaks to a transaction-mode pooler's next client.
#
# Generic plans: under the default plan_cache_mode PostgreSQL never keeps the claim's generic plan: a LIMIT it
# cannot evaluate and the task filter it cannot fold make its estimate several times the custom plan's, so it
# planned the claim anew on every execution, longer than running it (0.9 of a single-job lease's 1.6 ms,
# measured). The generic plans are the ones tests/postgres/test_claim_plan.py checks.
#
# Without sequential scans: a session keeps the generic plan it made first, until an ANALYZE of `jobs` or DDL
# invalidates it. Made as a server starts on a new or nearly empty table, it read the whole table to find the picked
# ids (cheaper than a primary-key probe on a table costed at a few pages), and kept doing so as the table grew, for as
# long as no ANALYZE ran: for ever with autovacuum off (migration 0023's docstring has the figures;
# tests/postgres/test_claim_plan_kept.py). Every table the claim reads has the index it needs.
#
# Without JIT: a generic plan costed on statistics taken after a held horizon ended (a sparse claim index, each probe
# costed at hundreds) passed the JIT thresholds, and PostgreSQL compiled the claim with LLVM at every execution,
# seconds of CPU for a plan that reads a few hundred buffers (migration 0023's docstring has the figures).
#
# An asynchronous commit: were PostgreSQL to crash before the WAL flush (a fraction of a second later), the claim
# would be lost and the job pending again, as when a lease expires (with the rate-limit tokens it spent, and the key
# turn it moved: the whole claim is one transaction); the worker's ack would then answer lease_lost, and the job
# runs again (at-least-once, as after any crash). Any later synchronous commit (the job's own completion, for one)
# flushes it first. The flush was half of a one-job claim's time (COMMIT 0.87 of 2.3 ms, measured; a round trip was
# 0.47). Enqueues and acks keep synchronous commits.
PLAN_SETTINGS = (("plan_cache_mode", "force_generic_plan"), ("enable_seqscan", "off"), ("jit", "off"))
"""How a claim is planned and run, in its transaction (BEGIN_CLAIM) and in its function (`function.claim_function_ddl`,
its SET clauses): the generic plan, without sequential scans, without JIT (each one's reason above)."""

BEGIN_CLAIM = "; ".join(
    ["BEGIN", *(f"SET LOCAL {name} = {value}" for name, value in (*PLAN_SETTINGS, ("synchronous_commit", "off")))]
)

_claim = Placeholders(ClaimArgs, TurnOf)
_CANDIDATE = "j.id, j.tenant_id, j.priority, j.scheduled_at, j.created_at"

# The claim of queues nobody restricts. Every queue on which some tenant restricts leasing is left out (one probe
# of idx_queue_settings_restricting per queue, which finds nothing on a queue nobody configured); those queues
# are claimed by CLAIM_RESTRICTED, under the settings rows' locks (`restricted.claim_restricted`).
# OFFSET 0 is an optimisation fence: without it the planner ran the probe after the LATERAL scan, which had
# already locked (and then discarded) a restricted queue's candidates, hiding them from CLAIM_RESTRICTED.
_UNRESTRICTED_QUEUES = f"""SELECT q.name FROM unnest({_claim.queues}) AS q(name)
                          WHERE NOT EXISTS (SELECT FROM queueflow.queue_settings AS s
                                             WHERE s.queue_name = q.name AND {RESTRICTING})
                         OFFSET 0"""

# The claim, fair across tenants (README.md, "Fairness"). For each (queue, tenant) with a claimable job
# (`tenants_in_turn`), the LATERAL subquery reads idx_jobs_claim_gen in claim order, skips rows another claimer holds
# and stops after the tenant's share; of a tenant's candidates from all its queues, its first `share` are its next
# jobs in claim order (`nth`, across the queues), and of those the claim takes `max_jobs` in turns (`picked`): each
# tenant's first, tenant after tenant starting after the turn's tenant in code-point order, then each one's second,
# and so on, as `core.turns.in_turns` orders them. A tenant that has fewer jobs than its share leaves the claim
# short; it comes back with `fair_share` so that the store can claim the rest from the tenants that filled theirs
# (`claims.claim_in_turns`). With one tenant and one queue the share is `max_jobs`: one statement.
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

_for_tenant = Placeholders(ClaimArgs, TenantScope)

# The claim of a tenant-scoped worker key: one tenant, so no turns; per queue and live generation, that tenant's
# range of idx_jobs_claim_gen in claim order, merged in claim order.
CLAIM_FOR_TENANT = f"""
{lease(_for_tenant)}
 WHERE id = ANY(ARRAY(
       SELECT due.id
         FROM (SELECT q.name FROM unnest({_for_tenant.queues}) AS q(name)
                WHERE NOT EXISTS (SELECT FROM queueflow.queue_settings AS s
                                   WHERE s.queue_name = q.name AND {RESTRICTING})
               OFFSET 0) AS queue,
              ({LIVE_GENERATIONS}) AS live,
              LATERAL (SELECT j.id, j.priority, j.scheduled_at, j.created_at FROM queueflow.jobs AS j
                        WHERE j.gen = live.gen AND j.queue_name = queue.name AND j.tenant_id = {_for_tenant.tenant}
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
# (`caches.IdleQueues`), as an idle worker polling an empty queue does again and again. Each queue's pending
# range of idx_jobs_claim_gen in each live generation, read until its first due row (a job waiting in its sequence
# is not due).
DUE_ANY = f"""
SELECT EXISTS (SELECT FROM unnest($1::text[]) AS queue(name), ({LIVE_GENERATIONS}) AS live,
                   LATERAL (SELECT FROM queueflow.jobs AS j
                             WHERE j.gen = live.gen AND j.queue_name = queue.name AND {READY}
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
