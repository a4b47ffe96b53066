"""The PostgresJobStore's SQL: one statement per store operation, each with the state change it makes.

`$n` parameters, for asyncpg, which prepares each statement once per connection and reuses it.
"""

COLUMNS = (
    "id, tenant_id, queue_name, task_name, payload, config, status, priority, scheduled_at, locked_until,"
    " lease_token, delivery_count, retry_count, max_retries, timeout_seconds, next_retry_at, workflow_id,"
    " workflow_step_id, result, error_message, metadata, idempotency_key, created_at, started_at, completed_at,"
    " progress, trace_context"
)
J_COLUMNS = ", ".join(f"j.{name.strip()}" for name in COLUMNS.split(","))
"""COLUMNS of the row aliased `j`, for statements that join another relation with the same column names."""

# Only the ids come back: an inserted row is exactly the Job that was sent, so reading it back would only
# cost decoding (a third of a batch enqueue's CPU, measured).
INSERT = """
INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, payload, config, priority, scheduled_at,
                            max_retries, timeout_seconds, metadata, idempotency_key, created_at, workflow_id,
                            workflow_step_id, trace_context)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::jsonb[], $7::int[],
                     $8::timestamptz[], $9::int[], $10::float8[], $11::jsonb[], $12::text[], $13::timestamptz[],
                     $14::text[], $15::text[], $16::jsonb[])
ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id
"""

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

# Rows of queueflow.queue_settings that restrict leasing: the predicate of idx_queue_settings_restricting.
RESTRICTING = "(paused OR concurrency_limit IS NOT NULL OR key_concurrency_limit IS NOT NULL OR rate_jobs IS NOT NULL)"


# What a claim writes into each job it takes ($3: now, $4: the lease). A lease never runs past the delivery's
# timeout (LEAST ignores a NULL timeout).
LEASE = """UPDATE queueflow.jobs
   SET status = 'running',
       lease_token = gen_random_uuid(),
       delivery_count = delivery_count + 1,
       started_at = $3,
       locked_until = LEAST($3 + $4::interval, $3 + make_interval(secs => timeout_seconds))"""


def _tenants_in_turn(queues: str, claimable: str, first_claimable: str = "false") -> str:
    """The CTEs a fair claim starts with (README.md, "Fairness"): `tenant`, every (queue_name, tenant_id) of the
    queues `queues` (a query of one column, `name`) with a job that `claimable` (a condition on `j`) holds for, and
    `share`, how many of `$2` jobs each tenant gets if all have enough: ceil($2 / tenants).

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
     WHERE {first_claimable}
        OR (SELECT true FROM queueflow.jobs AS j
             WHERE j.queue_name = pending.queue_name AND j.tenant_id = pending.tenant_id AND {claimable}
             ORDER BY j.priority DESC, j.scheduled_at, j.created_at, j.id LIMIT 1)
),
share AS (SELECT ceil($2::float8 / greatest(count(DISTINCT tenant_id), 1))::int AS per_tenant,
                 array_agg(queue_name) AS queue_names, array_agg(tenant_id) AS tenant_ids
            FROM tenant)"""


def _shares(columns: str, claimable: str) -> str:
    """`due`: for each (queue, tenant) of `_tenants_in_turn`, its `columns` of up to `share.per_tenant` jobs that
    `claimable` holds for, locked, read off idx_jobs_claim in claim order past the rows other claimers hold.

    The inner LIMIT $2 changes nothing (a share is at most $2) but gives the planner a bound: under a LIMIT it
    cannot evaluate, it estimates a tenth of the index's rows per tenant, and on a backlog of 100,000 jobs the
    claim's estimated cost passed jit_above_cost, so that PostgreSQL compiled it on every execution.
    """
    return f"""share, unnest(share.queue_names, share.tenant_ids) AS tenant(queue_name, tenant_id),
                      LATERAL (SELECT * FROM (
                               SELECT {columns}
                                 FROM queueflow.jobs AS j
                                WHERE j.queue_name = tenant.queue_name AND j.tenant_id = tenant.tenant_id
                                  AND {claimable}
                                ORDER BY j.priority DESC, j.scheduled_at, j.created_at, j.id
                                LIMIT $2
                                FOR UPDATE SKIP LOCKED) AS ahead
                                LIMIT share.per_tenant) AS due"""


# Run before a claim, in its transaction. Under the default plan_cache_mode PostgreSQL never keeps the claim's
# generic plan: a LIMIT it cannot evaluate and the task filter it cannot fold make its estimate several times the
# custom plan's, so it planned the claim anew on every execution, longer than running it (0.9 of a single-job
# lease's 1.6 ms, measured). The generic plans are the ones tests/postgres/test_claim_plan.py checks. SET LOCAL ends
# with the transaction, so no session state leaks to a transaction-mode pooler's next client.
GENERIC_PLANS = "SET LOCAL plan_cache_mode = force_generic_plan"
# A claim commits without waiting for its WAL to reach the disk: were PostgreSQL to crash before the flush (a
# fraction of a second later), the claim would be lost and the job pending again, as when a lease expires; the
# worker's ack would then answer lease_lost, and the job runs again (at-least-once, as after any crash). Any later
# synchronous commit (the job's own completion, for one) flushes it first. The flush was half of a one-job claim's
# time (COMMIT 0.87 of 2.3 ms, measured; a round trip was 0.47). Enqueues and acks keep synchronous commits.
ASYNC_COMMIT = "SET LOCAL synchronous_commit = off"
# A claim's transaction starts with both settings in one round trip (a simple query of three statements; asyncpg's
# transaction() and then a SET took two): a claim costs BEGIN+SETs, the claim, COMMIT — three round trips.
BEGIN_CLAIM = f"BEGIN; {GENERIC_PLANS}; {ASYNC_COMMIT}"

# Which jobs CLAIM may take: due, of the tasks a worker can run ($5, NULL: any).
CLAIMABLE = (
    "j.status IN ('pending', 'retrying') AND j.scheduled_at <= $3"
    " AND ($5::text[] IS NULL OR j.task_name = ANY($5::text[]))"
)

# The claim, fair across tenants (README.md, "Fairness"). For each (queue, tenant) with a claimable job
# (`_tenants_in_turn`), the LATERAL subquery reads idx_jobs_claim in claim order, skips rows another claimer holds
# and stops after the tenant's share; of a tenant's candidates from all its queues, its first `share` are its next
# jobs in claim order (`nth`, across the queues), and of those the claim takes `$2` in turns: each tenant's first,
# tenant after tenant starting after $6 (the tenant the previous lease served last, NULL: none) in code-point
# order, then each one's second, and so on, as `core.turns.in_turns` orders them. A tenant that has fewer jobs than
# its share leaves the claim short; it comes back with `fair_share` so that the store can claim the rest from the
# tenants that filled theirs (`_claim_in_turns`). With one tenant and one queue the share is `$2`: one statement.
# Candidates cut by the outer LIMIT stay locked only until this statement commits. `id = ANY(ARRAY(...))` keeps
# even a generic plan (whose LIMIT is a guess) on the primary key instead of a hash join over the table.
# This statement leaves out every queue on which some tenant restricts leasing (one probe of
# idx_queue_settings_restricting per queue, which finds nothing on a queue nobody configured); those queues
# are claimed by CLAIM_RESTRICTED, under the settings rows' locks (see `PostgresJobs._claim_restricted`).
# OFFSET 0 is an optimisation fence: without it the planner ran the probe after the LATERAL scan, which had
# already locked (and then discarded) a restricted queue's candidates, hiding them from CLAIM_RESTRICTED.
UNRESTRICTED_QUEUES = f"""SELECT q.name FROM unnest($1::text[]) AS q(name)
                          WHERE NOT EXISTS (SELECT FROM queueflow.queue_settings AS s
                                             WHERE s.queue_name = q.name AND {RESTRICTING})
                         OFFSET 0"""
# A tenant's first row in index order is claimable when it is due and no task filter applies ($5 NULL).
FIRST_CLAIMABLE = "(pending.scheduled_at <= $3 AND $5::text[] IS NULL)"
CLAIM = f"""{_tenants_in_turn(UNRESTRICTED_QUEUES, CLAIMABLE, FIRST_CLAIMABLE)}
{LEASE}
 WHERE id = ANY(ARRAY(
       SELECT c.id
         FROM (SELECT due.id, due.tenant_id, share.per_tenant,
                      row_number() OVER (
                          PARTITION BY due.tenant_id
                          ORDER BY due.priority DESC, due.scheduled_at, due.created_at, due.id) AS nth
                 FROM {_shares("j.id, j.tenant_id, j.priority, j.scheduled_at, j.created_at", CLAIMABLE)}) AS c
        WHERE c.nth <= c.per_tenant
        ORDER BY c.nth, c.tenant_id COLLATE "C" <= $6::text, c.tenant_id COLLATE "C"
        LIMIT $2))
RETURNING {COLUMNS}, (SELECT per_tenant FROM share) AS fair_share
"""

# The claim of a tenant-scoped worker key ($6): one tenant, so no turns; per queue, that tenant's range of
# idx_jobs_claim in claim order.
CLAIM_FOR_TENANT = f"""
{LEASE}
 WHERE id = ANY(ARRAY(
       SELECT due.id
         FROM (SELECT q.name FROM unnest($1::text[]) AS q(name)
                WHERE NOT EXISTS (SELECT FROM queueflow.queue_settings AS s
                                   WHERE s.queue_name = q.name AND {RESTRICTING})
               OFFSET 0) AS queue,
              LATERAL (SELECT j.id, j.priority, j.scheduled_at, j.created_at FROM queueflow.jobs AS j
                        WHERE j.queue_name = queue.name AND j.tenant_id = $6 AND {CLAIMABLE}
                        ORDER BY j.priority DESC, j.scheduled_at, j.created_at, j.id
                        LIMIT $2
                        FOR UPDATE SKIP LOCKED) AS due
        ORDER BY due.priority DESC, due.scheduled_at, due.created_at, due.id
        LIMIT $2))
RETURNING {COLUMNS}
"""

# The rate-limit buckets of the queues $1, for a parked lease to sleep until the next token (idle path only).
RATE_BUCKETS = """
SELECT rate_jobs, rate_per_seconds, rate_tokens, rate_refilled_at FROM queueflow.queue_settings
 WHERE queue_name = ANY($1::text[]) AND rate_jobs IS NOT NULL AND NOT paused
"""

# Which of the queues $1 some tenant restricts (CLAIM left them out).
RESTRICTED_QUEUES = f"""
SELECT DISTINCT queue_name FROM queueflow.queue_settings WHERE queue_name = ANY($1::text[]) AND {RESTRICTING}
"""

# A settings row as the claim and the held-back gauge read it: the limits and the rate bucket.
RESTRICTION_ROWS = """SELECT tenant_id, queue_name, paused, concurrency_limit, key_concurrency_limit,
       rate_jobs, rate_per_seconds, rate_tokens, rate_refilled_at, key_turn
  FROM queueflow.queue_settings"""

# Of the queues $1 some tenant restricts, every restricting row, locked in one global order (tenant,
# queue) so that two claims never wait on each other's locks in a cycle. A claim of a restricted queue holds
# these locks until it commits: claims of one restricted queue run one at a time, and each one sees every job
# the claims before it leased (see `PostgresJobs._claim_restricted`).
RESTRICTIONS_LOCK = f"""
{RESTRICTION_ROWS}
 WHERE queue_name = ANY($1::text[]) AND {RESTRICTING}
 ORDER BY tenant_id, queue_name
   FOR UPDATE
"""

# Running jobs per limited (tenant, queue), read by a statement of its own after RESTRICTIONS_LOCK is granted:
# in READ COMMITTED each statement takes a fresh snapshot, so this one sees the jobs the previous holder of the
# lock leased (it committed before the lock came free). Counted within the lock, in the same statement as the
# lock, the snapshot would predate that commit and the count would be short.
RUNNING_COUNTS = """
SELECT g.tenant_id, g.queue_name,
       (SELECT count(*) FROM queueflow.jobs AS j
         WHERE j.status = 'running' AND j.tenant_id = g.tenant_id AND j.queue_name = g.queue_name) AS running
  FROM unnest($1::text[], $2::text[]) AS g(tenant_id, queue_name)
"""

# Running jobs per concurrency_key of each key-limited (tenant, queue), read after RESTRICTIONS_LOCK as RUNNING_COUNTS.
RUNNING_KEY_COUNTS = """
SELECT j.tenant_id, j.queue_name, j.config->>'concurrency_key' AS key, count(*) AS running
  FROM unnest($1::text[], $2::text[]) AS g(tenant_id, queue_name)
  JOIN queueflow.jobs AS j ON j.tenant_id = g.tenant_id AND j.queue_name = g.queue_name
 WHERE j.status = 'running' AND j.config ? 'concurrency_key'
 GROUP BY 1, 2, 3
"""

# Which jobs CLAIM_RESTRICTED may take: due, of the tasks a worker can run ($20, NULL: any), and none of a blocked
# (tenant, queue) ($5, $6: paused, or at its limit) or of a concurrency key at its limit ($17, $18, $19) — left
# out of the scan itself, so that a blocked group's backlog never fills the candidates and starves the others.
# OFFSET 0 keeps each NOT EXISTS a filter on the rows of the index scan, in index order: without it the planner
# made them anti-joins, which lose that order, so that every probe and share read and sorted all of a tenant's
# jobs (a sequential scan of the table, 18 ms per probe with 10,000 jobs).
RESTRICTED_CLAIMABLE = """j.status IN ('pending', 'retrying') AND j.scheduled_at <= $3
                                  AND ($20::text[] IS NULL OR j.task_name = ANY($20::text[]))
                                  AND NOT EXISTS (SELECT FROM unnest($5::text[], $6::text[]) AS b(tenant_id, queue_name)
                                                   WHERE b.tenant_id = j.tenant_id AND b.queue_name = j.queue_name
                                                  OFFSET 0)
                                  AND NOT EXISTS (SELECT FROM unnest($17::text[], $18::text[], $19::text[])
                                                           AS bk(tenant_id, queue_name, key)
                                                   WHERE bk.tenant_id = j.tenant_id AND bk.queue_name = j.queue_name
                                                     AND bk.key = j.config->>'concurrency_key'
                                                  OFFSET 0)"""


CANDIDATE = (
    "j.id, j.tenant_id, j.queue_name, j.priority, j.scheduled_at, j.created_at,"
    " j.config->>'concurrency_key' AS concurrency_key"
)
CLAIM_ORDER = "priority DESC, scheduled_at, created_at, id"
J_CLAIM_ORDER = "j.priority DESC, j.scheduled_at, j.created_at, j.id"

# A job's concurrency key in idx_jobs_keyed (migration 0006), in code-point order: the order keys take turns in.
KEY = "(j.config->>'concurrency_key') COLLATE \"C\""
# The predicate of idx_jobs_keyed, stated so that the planner may read it.
KEYED_PENDING = "j.status IN ('pending', 'retrying') AND j.config ? 'concurrency_key'"


def _keys_in_turn(claimable: str) -> str:
    """The CTEs that find the concurrency keys of each key-limited (tenant, queue) among `tenant` (README.md,
    "Fairness"): `key_limited`, those pairs ($10, $11: under key limit $12) with the key their last lease served
    ($22), and `part`, the keys a claim may take from, each with how many jobs it may give: its part of the tenant's
    share, ceil(share / keys), never more than its free slots ($13–$16; a key that runs nothing has `key_limit`).

    The keys are read in the turn's order, as `_tenants_in_turn` reads the tenants: a skip scan of idx_jobs_keyed
    (code-point order), one descent per key, from the first key after the one served last, wrapping around to the
    first key and ending with that one; each key is probed for a claimable job (in claim order, LIMIT 1; none for a
    key at its limit: `claimable` leaves those out). The scan stops once it has found `share` claimable keys, which
    are all a claim can reach (each gives one job then), so a queue with thousands of keys costs a claim the keys
    it serves, not all of them.
    """
    after = f"""(SELECT {KEY} FROM queueflow.jobs AS j
                    WHERE j.queue_name = {{pair}}.queue_name AND j.tenant_id = {{pair}}.tenant_id AND {KEYED_PENDING}
                          AND {KEY} > {{after}}
                    ORDER BY {KEY}, {J_CLAIM_ORDER} LIMIT 1)"""
    first = f"""(SELECT {KEY} FROM queueflow.jobs AS j
                    WHERE j.queue_name = {{pair}}.queue_name AND j.tenant_id = {{pair}}.tenant_id AND {KEYED_PENDING}
                    ORDER BY {KEY}, {J_CLAIM_ORDER} LIMIT 1)"""
    probe = f"""(SELECT true FROM queueflow.jobs AS j
              WHERE j.queue_name = {{pair}}.queue_name AND j.tenant_id = {{pair}}.tenant_id AND {KEYED_PENDING}
                AND {KEY} = k.key AND {claimable}
              ORDER BY {KEY}, {J_CLAIM_ORDER} LIMIT 1) IS NOT NULL"""
    return f""",
key_limited AS (
    SELECT tenant.queue_name, tenant.tenant_id, kl.key_limit, kl.key_turn
      FROM tenant
      JOIN unnest($10::text[], $11::text[], $12::int[], $22::text[]) AS kl(tenant_id, queue_name, key_limit, key_turn)
        ON kl.tenant_id = tenant.tenant_id AND kl.queue_name = tenant.queue_name
),
key_scan AS (
    SELECT kl.queue_name, kl.tenant_id, kl.key_turn, k.key, k.wrapped, {probe.format(pair="kl")} AS claimable,
           0 AS found
      FROM key_limited AS kl,
           LATERAL (SELECT * FROM (SELECT {after.format(pair="kl", after="kl.key_turn")} AS key, false AS wrapped
                                   UNION ALL
                                   SELECT {first.format(pair="kl")}, true) AS k
                     WHERE k.key IS NOT NULL
                     ORDER BY k.wrapped LIMIT 1) AS k
    UNION ALL
    SELECT ks.queue_name, ks.tenant_id, ks.key_turn, k.key, k.wrapped, {probe.format(pair="ks")},
           ks.found + ks.claimable::int
      FROM key_scan AS ks, share,
           LATERAL (SELECT * FROM (SELECT {after.format(pair="ks", after="ks.key")} AS key, ks.wrapped AS wrapped
                                   UNION ALL
                                   SELECT {first.format(pair="ks")}, true WHERE NOT ks.wrapped) AS k
                     WHERE k.key IS NOT NULL AND NOT coalesce(k.wrapped AND k.key > ks.key_turn, false)
                     ORDER BY k.wrapped LIMIT 1) AS k
     WHERE ks.found + ks.claimable::int < share.per_tenant
),
part AS (
    SELECT key_scan.queue_name, key_scan.tenant_id, key_scan.key,
           coalesce(ks.slots, key_limited.key_limit) AS slots,
           ceil(share.per_tenant::float8 / count(*) OVER (PARTITION BY key_scan.queue_name, key_scan.tenant_id))::int
           AS per_key
      FROM share, key_scan
      JOIN key_limited ON key_limited.queue_name = key_scan.queue_name AND key_limited.tenant_id = key_scan.tenant_id
      LEFT JOIN unnest($13::text[], $14::text[], $15::text[], $16::int[]) AS ks(tenant_id, queue_name, key, slots)
             ON ks.tenant_id = key_scan.tenant_id AND ks.queue_name = key_scan.queue_name AND ks.key = key_scan.key
     WHERE key_scan.claimable
)"""


def _claim_restricted(claimable: str) -> str:
    """CLAIM for restricted queues ($1), of the jobs `claimable` holds for, in turns as CLAIM (after $21), and
    within a key-limited (tenant, queue) in key turns (`_keys_in_turn`, after $22), as `core.turns.in_turns`
    orders them.

    `due` holds the candidates: each tenant's share, read per (queue, tenant) in claim order as CLAIM reads it, and
    in a key-limited one each key's `part` too; a key's jobs past its free slots are left out. In a (queue, tenant),
    the keyed jobs of a key-limited one keep their places in claim order (`place`: the nth such job has the place
    of the nth in claim order) and fill them in key turns (`kpos`); every other job keeps its own. A tenant's
    `turn` follows the places, and at most `slots` of a limited (tenant, queue) ($7, $8, $9) are taken, the first
    by place. A key with fewer jobs than its part leaves the claim short; the store claims again
    (`PostgresJobs._claim_restricted`), and the next rounds of the turn come from the keys that have more.
    """
    keyed_part = f"""SELECT due.* FROM part,
           LATERAL (SELECT * FROM (
                    SELECT {CANDIDATE} FROM queueflow.jobs AS j
                     WHERE j.queue_name = part.queue_name AND j.tenant_id = part.tenant_id AND {KEYED_PENDING}
                       AND {KEY} = part.key AND {claimable}
                     ORDER BY {KEY}, {J_CLAIM_ORDER}
                     LIMIT $2
                     FOR UPDATE SKIP LOCKED) AS ahead
                     LIMIT least(part.per_key, part.slots)) AS due"""
    tenants = _tenants_in_turn("SELECT q.name FROM unnest($1::text[]) AS q(name)", claimable)
    return f"""{tenants}{_keys_in_turn(claimable)},
due AS (
    SELECT due.* FROM {_shares(CANDIDATE, claimable)}
    UNION
    {keyed_part}
),
keyed AS (
    SELECT due.*, kl.key_turn,
           CASE WHEN kl.key_limit IS NOT NULL THEN due.concurrency_key END AS turn_key,
           coalesce(ks.slots, kl.key_limit) AS key_slots,
           row_number() OVER (
               PARTITION BY due.tenant_id, due.queue_name, due.concurrency_key ORDER BY {CLAIM_ORDER}) AS key_round
      FROM due
      LEFT JOIN key_limited AS kl ON kl.queue_name = due.queue_name AND kl.tenant_id = due.tenant_id
      LEFT JOIN unnest($13::text[], $14::text[], $15::text[], $16::int[]) AS ks(tenant_id, queue_name, key, slots)
             ON ks.tenant_id = due.tenant_id AND ks.queue_name = due.queue_name AND ks.key = due.concurrency_key
),
ranked AS (
    SELECT keyed.*, share.per_tenant,
           row_number() OVER (
               PARTITION BY keyed.tenant_id, keyed.queue_name, keyed.turn_key IS NULL ORDER BY {CLAIM_ORDER}) AS nth,
           row_number() OVER (
               PARTITION BY keyed.tenant_id, keyed.queue_name, keyed.turn_key IS NULL
               ORDER BY CASE WHEN keyed.turn_key IS NOT NULL THEN keyed.key_round END,
                        keyed.turn_key COLLATE "C" <= keyed.key_turn, keyed.turn_key COLLATE "C", {CLAIM_ORDER}) AS kpos
      FROM share, keyed
     WHERE keyed.turn_key IS NULL OR keyed.key_round <= keyed.key_slots
),
placed AS (
    SELECT r.id, r.tenant_id, r.queue_name, r.per_tenant,
           row_number() OVER (
               PARTITION BY r.tenant_id ORDER BY s.priority DESC, s.scheduled_at, s.created_at, s.id) AS turn,
           row_number() OVER (
               PARTITION BY r.tenant_id, r.queue_name
               ORDER BY s.priority DESC, s.scheduled_at, s.created_at, s.id) AS place
      FROM ranked AS r
      JOIN ranked AS s ON s.tenant_id = r.tenant_id AND s.queue_name = r.queue_name
                      AND (s.turn_key IS NULL) = (r.turn_key IS NULL) AND s.nth = r.kpos
)
{LEASE}
 WHERE id = ANY(ARRAY(
       SELECT p.id
         FROM placed AS p
         LEFT JOIN unnest($7::text[], $8::text[], $9::int[]) AS cap(tenant_id, queue_name, slots)
                ON cap.tenant_id = p.tenant_id AND cap.queue_name = p.queue_name
        WHERE p.turn <= p.per_tenant AND (cap.slots IS NULL OR p.place <= cap.slots)
        ORDER BY p.turn, p.tenant_id COLLATE "C" <= $21::text, p.tenant_id COLLATE "C"
        LIMIT $2))
RETURNING {COLUMNS}
"""


CLAIM_RESTRICTED = _claim_restricted(RESTRICTED_CLAIMABLE)

# CLAIM_RESTRICTED for a tenant-scoped worker key ($23): a scoped key never leases another tenant's job, from a
# restricted queue either.
CLAIM_RESTRICTED_FOR_TENANT = _claim_restricted(f"j.tenant_id = $23 AND {RESTRICTED_CLAIMABLE}")

# The token buckets a restricted claim spent from, as of its `now` ($4), under the lock RESTRICTIONS_LOCK took.
SPEND_TOKENS = """
UPDATE queueflow.queue_settings AS s
   SET rate_tokens = b.tokens, rate_refilled_at = $4
  FROM unnest($1::text[], $2::text[], $3::float8[]) AS b(tenant_id, queue_name, tokens)
 WHERE s.tenant_id = b.tenant_id AND s.queue_name = b.queue_name
"""

# Where the key turn of each key-limited (tenant, queue) a restricted claim leased from goes on: the key it served
# last ('' for a job without one), under the lock RESTRICTIONS_LOCK took.
SAVE_KEY_TURNS = """
UPDATE queueflow.queue_settings AS s
   SET key_turn = t.key
  FROM unnest($1::text[], $2::text[], $3::text[]) AS t(tenant_id, queue_name, key)
 WHERE s.tenant_id = t.tenant_id AND s.queue_name = t.queue_name
"""

# Every restricting settings row, with its bucket (`flow.held_back`, for /metrics).
RESTRICTIONS = f"""
{RESTRICTION_ROWS}
 WHERE {RESTRICTING}
"""

# Due (as of $1) and running jobs per concurrency_key of every restricted (tenant, queue).
RESTRICTED_BACKLOGS = f"""
SELECT s.tenant_id, s.queue_name, j.config->>'concurrency_key' AS key,
       count(*) FILTER (WHERE j.status <> 'running') AS due,
       count(*) FILTER (WHERE j.status = 'running') AS running
  FROM queueflow.queue_settings AS s
  JOIN queueflow.jobs AS j ON j.tenant_id = s.tenant_id AND j.queue_name = s.queue_name
 WHERE {RESTRICTING}
   AND (j.status = 'running' OR (j.status IN ('pending', 'retrying') AND j.scheduled_at <= $1))
 GROUP BY 1, 2, 3
"""

SETTINGS_COLUMNS = "queue_name, paused, concurrency_limit, key_concurrency_limit, rate_jobs, rate_per_seconds"

QUEUE_SETTINGS = f"""
SELECT {SETTINGS_COLUMNS} FROM queueflow.queue_settings
 WHERE tenant_id = $1 AND ($2::text IS NULL OR queue_name = $2)
"""

# A PATCH in one statement: each field is replaced only when its flag ($3, $5, $7, $9) says it was sent, so two
# patches of different fields never undo each other. A new rate limit starts with a full bucket. An UPDATE
# fires no insert trigger, so the queue is announced here: lessees parked on a paused or full queue look again.
QUEUE_CONFIGURE = f"""
WITH saved AS (
    INSERT INTO queueflow.queue_settings AS s
           (tenant_id, queue_name, paused, concurrency_limit, key_concurrency_limit, rate_jobs, rate_per_seconds,
            rate_tokens, rate_refilled_at, updated_at)
    VALUES ($1, $2, $3 AND $4, CASE WHEN $5 THEN $6::int END, CASE WHEN $7 THEN $8::int END,
            CASE WHEN $9 THEN $10::int END, CASE WHEN $9 THEN $11::float8 END, CASE WHEN $9 THEN $10::float8 END,
            CASE WHEN $9 AND $10 IS NOT NULL THEN $12::timestamptz END, $12)
    ON CONFLICT (tenant_id, queue_name) DO UPDATE
       SET paused = CASE WHEN $3 THEN $4 ELSE s.paused END,
           concurrency_limit = CASE WHEN $5 THEN $6::int ELSE s.concurrency_limit END,
           key_concurrency_limit = CASE WHEN $7 THEN $8::int ELSE s.key_concurrency_limit END,
           rate_jobs = CASE WHEN $9 THEN $10::int ELSE s.rate_jobs END,
           rate_per_seconds = CASE WHEN $9 THEN $11::float8 ELSE s.rate_per_seconds END,
           rate_tokens = CASE WHEN $9 THEN $10::float8 ELSE s.rate_tokens END,
           rate_refilled_at = CASE WHEN $9 THEN CASE WHEN $10 IS NOT NULL THEN $12::timestamptz END
                                   ELSE s.rate_refilled_at END,
           updated_at = $12
    RETURNING {SETTINGS_COLUMNS})
SELECT saved.*, pg_notify('queueflow_work', queue_name) FROM saved
"""

# The earliest time a job of `queues` becomes claimable after now: per queue, the first row of idx_jobs_due
# after now (the claim index, ordered by priority first, cannot answer this without reading every row). That
# index holds only the jobs written ahead of their time (`scheduled_at > created_at`, see migration 0005): a job
# due when it was written is never due after now, unless a clock behind the one that wrote it reads it.
NEXT_DUE = """
SELECT min(due.scheduled_at)
  FROM unnest($1::text[]) AS queue(name),
       LATERAL (SELECT scheduled_at FROM queueflow.jobs
                 WHERE queue_name = queue.name AND status IN ('pending', 'retrying') AND scheduled_at > $2
                   AND scheduled_at > created_at
                 ORDER BY scheduled_at
                 LIMIT 1) AS due
"""

# The lease {token} still holds job j. The status test sits inside CASE so that it does not imply the predicate of
# idx_jobs_lease_expiry (status = 'running'): the planner then reaches j only by its primary key, and a batch
# (ack, heartbeat, release) costs its own size. With the test in plain sight, statistics that lagged a burst of
# inserts (taken while the table was near empty) made the planner read every running job through that index and
# hash them, on every ack: a worker that leased ahead faster than it acked slowed each ack further, until acks of
# 1,000 outcomes outlived the statement timeout on a 100,000-job backlog (tests/postgres/test_claim_plan.py).
HOLDS_LEASE = "CASE WHEN j.status = 'running' THEN j.lease_token END = {token} AND j.locked_until > {now}"

# A job of queue {queue} has just ended. If some tenant caps how many of its jobs run there, a slot came free: the
# queue is announced, and a lease the cap held back takes the next job at once rather than on the safety poll. (A
# cancelled job may not have been running; a spare wake-up is harmless.) One probe of
# idx_queue_settings_restricting per row, which finds nothing on a queue nobody configured; identical
# notifications of one transaction fold into one.
SLOT_FREED = """CASE WHEN EXISTS (SELECT FROM queueflow.queue_settings AS fs
                    WHERE fs.queue_name = {queue}
                      AND (fs.concurrency_limit IS NOT NULL OR fs.key_concurrency_limit IS NOT NULL))
          THEN pg_notify('queueflow_work', {queue}) END"""

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

COMPLETE = f"""
UPDATE queueflow.jobs AS j
   SET status = 'completed', result = c.result, completed_at = $4, lease_token = NULL, locked_until = NULL
  FROM unnest($1::text[], $2::uuid[], $3::jsonb[]) AS c(id, lease_token, result)
 WHERE j.id = c.id AND {HOLDS_LEASE.format(token="c.lease_token", now="$4")}
RETURNING {J_COLUMNS}, c.lease_token::text AS held_token, {SLOT_FREED.format(queue="j.queue_name")}
"""

# A claim handed back: the row as the claim found it, but for started_at when an earlier delivery is left (the
# released claim's stays; the earlier one's is not kept). An UPDATE does not fire the insert trigger, so the
# queue is announced here.
RELEASE = f"""
WITH released AS (
    UPDATE queueflow.jobs AS j
       SET status = CASE WHEN j.retry_count > 0 THEN 'retrying' ELSE 'pending' END,
           delivery_count = j.delivery_count - 1,
           started_at = CASE WHEN j.delivery_count > 1 THEN j.started_at END,
           lease_token = NULL, locked_until = NULL
      FROM unnest($1::text[], $2::uuid[]) AS r(id, lease_token)
     WHERE j.id = r.id AND {HOLDS_LEASE.format(token="r.lease_token", now="$3")}
    RETURNING {J_COLUMNS}, r.lease_token::text AS held_token)
SELECT released.*, pg_notify('queueflow_work', queue_name) FROM released
"""

# COMPLETE, answering only what a batched ack needs (decoding whole rows was a third of its cost, measured).
COMPLETE_BRIEF = f"""
UPDATE queueflow.jobs AS j
   SET status = 'completed', result = c.result, completed_at = $4, lease_token = NULL, locked_until = NULL
  FROM unnest($1::text[], $2::uuid[], $3::jsonb[]) AS c(id, lease_token, result)
 WHERE j.id = c.id AND {HOLDS_LEASE.format(token="c.lease_token", now="$4")}
RETURNING j.id, c.lease_token::text AS held_token, j.queue_name, j.workflow_id,
          {SLOT_FREED.format(queue="j.queue_name")}
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
       {SLOT_FREED.format(queue="failed.queue_name")}
  FROM failed
"""

CANCEL = f"""
UPDATE queueflow.jobs AS j
   SET status = 'cancelled', lease_token = NULL, locked_until = NULL, completed_at = $3
 WHERE j.id = $2 AND j.tenant_id = $1 AND j.status IN ('pending', 'retrying', 'running')
RETURNING {J_COLUMNS}, {SLOT_FREED.format(queue="j.queue_name")}
"""

# An UPDATE does not fire the insert trigger, so a replayed job announces itself.
RETRY = f"""
WITH replayed AS (
    UPDATE queueflow.jobs
       SET status = 'pending', retry_count = 0, scheduled_at = $3, next_retry_at = NULL, completed_at = NULL
     WHERE id = $2 AND tenant_id = $1 AND status IN ('dead_letter', 'cancelled')
    RETURNING {COLUMNS})
SELECT *, pg_notify('queueflow_work', queue_name) FROM replayed
"""

# SKIP LOCKED, and the re-check of `locked_until <= $1` that FOR UPDATE makes on a row another janitor has
# just re-leased, let any number of janitors sweep at once and take each expired row once.
LEASE_EXPIRED = f"""
WITH expired AS (
    SELECT id, locked_until FROM queueflow.jobs
     WHERE status = 'running' AND locked_until <= $1
     ORDER BY locked_until, id
     LIMIT $2
     FOR UPDATE SKIP LOCKED)
UPDATE queueflow.jobs AS j SET locked_until = $1 + $3::interval, lease_token = gen_random_uuid()
  FROM expired WHERE j.id = expired.id
RETURNING {J_COLUMNS}, expired.locked_until AS expired_at
"""

# A running workflow's finished step jobs stay: its self-heal reads their outcomes.
# `id = ANY(ARRAY(...))`, not `id IN (...)`: the array is an InitPlan, run once. As a semi-join the planner may run
# the LIMITed subquery more than once (a nested loop rescans it), and one DELETE then removed 3 rows with LIMIT 2.
DELETE_FINISHED = """
DELETE FROM queueflow.jobs
 WHERE id = ANY(ARRAY(SELECT j.id FROM queueflow.jobs AS j
                       WHERE j.status IN ('completed', 'dead_letter', 'cancelled') AND j.completed_at < $1
                         AND NOT EXISTS (SELECT FROM queueflow.workflows AS w
                                          WHERE w.id = j.workflow_id AND w.status = 'running')
                       ORDER BY j.completed_at
                       LIMIT $2
                       FOR UPDATE SKIP LOCKED))
"""

QUEUE_COUNTS = """
SELECT queue_name AS name,
       count(*) FILTER (WHERE status IN ('pending', 'retrying') AND scheduled_at <= $2) AS pending,
       count(*) FILTER (WHERE status IN ('pending', 'retrying') AND scheduled_at > $2) AS scheduled,
       count(*) FILTER (WHERE status = 'running') AS running,
       count(*) FILTER (WHERE status = 'retrying') AS retrying,
       count(*) FILTER (WHERE status = 'completed') AS completed,
       count(*) FILTER (WHERE status = 'dead_letter') AS dead_letter,
       count(*) FILTER (WHERE status = 'cancelled') AS cancelled,
       min(scheduled_at) FILTER (WHERE status IN ('pending', 'retrying') AND scheduled_at <= $2) AS oldest_due_at
  FROM queueflow.jobs
 WHERE tenant_id = $1
 GROUP BY queue_name
"""

QUEUE_THROUGHPUT = """
SELECT queue_name AS name,
       date_trunc('minute', completed_at, 'UTC') AS minute,
       count(*) FILTER (WHERE status = 'completed') AS completed,
       count(*) FILTER (WHERE status = 'dead_letter') AS dead_lettered
  FROM queueflow.jobs
 WHERE tenant_id = $1 AND status IN ('completed', 'dead_letter') AND completed_at >= $2
 GROUP BY 1, 2
"""
