"""The pieces both claims are built from (README.md, "Fairness"): which settings rows restrict a queue, the claim
order, what a claim writes into each job it takes (`lease`), which jobs it may take (`claimable`), the tenants in
turn and each one's share (`tenants_in_turn`, `shares`), and how the turn moves (`turn_moved`).

Each takes the placeholders of the statement it is part of (`params.Placeholders`): the claim of unrestricted
queues (`unrestricted_sql`) and the restricted claim (`restricted_sql`) build on them with their own parameters.
"""

from __future__ import annotations

from queueflow.stores.postgres.params import Placeholders
from queueflow.stores.postgres.sql import STARTED_BEFORE

# Rows of queueflow.queue_settings that restrict leasing: the predicate of idx_queue_settings_restricting.
RESTRICTING = "(paused OR concurrency_limit IS NOT NULL OR key_concurrency_limit IS NOT NULL OR rate_jobs IS NOT NULL)"

# Claim order within a tenant: idx_jobs_claim_gen's order after (gen, queue_name, tenant_id).
CLAIM_ORDER = "priority DESC, scheduled_at, created_at, id"
J_CLAIM_ORDER = "j.priority DESC, j.scheduled_at, j.created_at, j.id"


# A job still to start that idx_jobs_claim_gen holds: pending or retrying, and not known to wait in its sequence.
# Every read of idx_jobs_claim_gen states it (the index's predicate, migrations 0021 and 0022), so that the planner
# may use the index; idx_jobs_claim (status alone) stays for release 0.2.0's claims until the next release drops it.
READY = "j.status COLLATE \"C\" IN ('pending', 'retrying') AND j.sequence_waiting IS NOT TRUE"

# The live generations of the claim's index (migration 0022, `stores.postgres.generations`): every read of
# idx_jobs_claim_gen reads one (queue, generation) range at a time, so that it never reaches the dead entries of a
# retired generation, which a held xmin horizon keeps. Their merge is exact: each range is in claim order, and
# the claim merges ranges already (a tenant's queues; `shares`' row_number over the tenant in claim order).
# Read through a function of migration 0022 that the planner estimates at 1 row (its ROWS) whatever the registry's
# statistics say: scanned as a table, never analyzed (autovacuum off), it was estimated at 1,700 rows and the claim's
# cost passed jit_above_cost; as unnest of an array, at 10, and a restricted claim's still did; at 2, a key-limited
# claim's did on some statistics (100,465 against 100,000; tests/postgres/test_claim_plan.py). Costed as on one
# generation, the plans are the claim's as they were (index probes per range, nested loops). STABLE: it reads the
# registry as of the claim's snapshot.
LIVE_GENERATIONS = "SELECT live.gen FROM queueflow.live_generations() AS live(gen)"

# A job of a sequence holds it while pending, retrying or running, or dead-lettered and halting (`core.sequences`):
# idx_jobs_sequence's predicate, for the job aliased `s`.
HOLDS = "(s.status IN ('pending', 'retrying', 'running') OR (s.status = 'dead_letter' AND s.sequence_halt))"

# `core.sequences.free_to_start` for the job `j` of a sequence: no earlier job of it holds it, and none of it runs —
# that is, `j` is the first of its sequence's holding jobs when the running ones come first. One probe of
# idx_jobs_sequence (tenant_id, sequence_key, status <> 'running', id; migration 0021), whose first entry in the
# key's range answers. Exact under concurrent claims: a job stops holding only by finishing (or a resume), so a
# snapshot that shows it holding is at worst stale in the conservative direction.
#
# It runs only for the jobs a claim reads off idx_jobs_claim_ready: a job enqueued behind a holding job of its sequence
# is written with `sequence_waiting` (migration 0021's trigger), which keeps it out of that index until the job
# that held it stops holding. The flag only spares reads; this test alone decides.
SEQUENCE_FREE = f"""(SELECT s.id FROM queueflow.jobs AS s
                    WHERE s.tenant_id = j.tenant_id AND s.sequence_key = j.sequence_key AND {HOLDS}
                    ORDER BY s.status <> 'running', s.id LIMIT 1) = j.id"""


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
    """A job any claim may take: due, not past its deadline (`core.deadlines`: never started late, whether or not
    the timer has dead-lettered it yet), of the tasks a worker can run. The deadline is a filter on the row the
    claim reads anyway (to lock it), not an index condition: a job without one costs one null test. So is its
    sequence (`SEQUENCE_FREE`): a job without one costs one more null test."""
    return (
        f"{READY} AND j.scheduled_at <= {p.now}"
        f" AND (j.expires_at IS NULL OR j.expires_at > {p.now})"
        f" AND ({p.task_names} IS NULL OR j.task_name = ANY({p.task_names}))"
        f" AND (j.sequence_key IS NULL OR {SEQUENCE_FREE})"
    )


def tenants_in_turn(p: Placeholders, queues: str, claimable: str, first_claimable: str = "false") -> str:
    """The CTEs a fair claim starts with (README.md, "Fairness"): `tenant`, every (queue_name, tenant_id) of the
    queues `queues` (a query of one column, `name`) with a job that `claimable` (a condition on `j`) holds for, and
    `share`, how many of `max_jobs` each tenant gets if all have enough: ceil(max_jobs / tenants).

    The tenants are found by a skip scan of idx_jobs_claim_gen (gen, queue_name, tenant_id, …) per live generation:
    one index descent per (generation, tenant) with pending or retrying jobs, each for the next tenant_id after the
    previous one, however many jobs each holds — then kept if one of its jobs is claimable, which reads its jobs in
    claim order until the first one that is. Written so that no plan does otherwise: each subquery orders by the
    whole index order, which no other index gives (ordered by `tenant_id` alone, a generic plan walked
    idx_jobs_tenant_created filtering the queue, and an unordered check scanned the table), and the claimable check
    is a LIMIT 1 subquery, run per tenant (as EXISTS, the planner made it a semi-join over every due row).

    `first_claimable` (a condition on `pending.scheduled_at`, the tenant's first row in index order) spares that
    check when it holds: in a backlog a tenant's first pending job is usually due, and one probe per tenant fewer
    was a quarter of a 100-tenant claim (7.5 → 5.6 ms per claim of 100, measured).
    """
    return f"""
WITH RECURSIVE queue AS (SELECT named.name, live.gen FROM ({queues}) AS named, ({LIVE_GENERATIONS}) AS live),
pending AS (
    SELECT queue.name AS queue_name, queue.gen, first.tenant_id, first.scheduled_at
      FROM queue,
           LATERAL (SELECT j.tenant_id, j.scheduled_at FROM queueflow.jobs AS j
                     WHERE j.gen = queue.gen AND j.queue_name = queue.name AND {READY}
                     ORDER BY j.tenant_id, {J_CLAIM_ORDER} LIMIT 1) AS first
    UNION ALL
    SELECT pending.queue_name, pending.gen, next.tenant_id, next.scheduled_at
      FROM pending,
           LATERAL (SELECT j.tenant_id, j.scheduled_at FROM queueflow.jobs AS j
                     WHERE j.gen = pending.gen AND j.queue_name = pending.queue_name AND {READY}
                       AND j.tenant_id > pending.tenant_id
                     ORDER BY j.tenant_id, {J_CLAIM_ORDER} LIMIT 1) AS next
),
tenant AS (
    SELECT pending.queue_name, pending.gen, pending.tenant_id FROM pending
     WHERE {first_claimable}
        OR (SELECT true FROM queueflow.jobs AS j
             WHERE j.gen = pending.gen AND j.queue_name = pending.queue_name AND j.tenant_id = pending.tenant_id
               AND {claimable}
             ORDER BY {J_CLAIM_ORDER} LIMIT 1)
),
share AS (SELECT ceil({p.max_jobs}::float8 / greatest(count(DISTINCT tenant_id), 1))::int AS per_tenant,
                 array_agg(queue_name) AS queue_names, array_agg(gen) AS gens, array_agg(tenant_id) AS tenant_ids
            FROM tenant)"""


def shares(p: Placeholders, columns: str, claimable: str) -> str:
    """`due`: for each (queue, generation, tenant) of `tenants_in_turn`, its `columns` of up to `share.per_tenant`
    jobs that `claimable` holds for, locked, read off idx_jobs_claim_gen in claim order past the rows other claimers
    hold. A tenant's share then comes from the first of them in claim order, across its queues and generations.

    The inner LIMIT max_jobs changes nothing (a share is at most that) but gives the planner a bound: under a LIMIT
    it cannot evaluate, it estimates a tenth of the index's rows per tenant, and on a backlog of 100,000 jobs the
    claim's estimated cost passed jit_above_cost, so that PostgreSQL compiled it on every execution.
    """
    return f"""share, unnest(share.queue_names, share.gens, share.tenant_ids) AS tenant(queue_name, gen, tenant_id),
                      LATERAL (SELECT * FROM (
                               SELECT {columns}
                                 FROM queueflow.jobs AS j
                                WHERE j.gen = tenant.gen AND j.queue_name = tenant.queue_name
                                  AND j.tenant_id = tenant.tenant_id
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
