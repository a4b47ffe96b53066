"""The claim's SQL on queues some tenant restricts (pause, concurrency limits, rate limits; `restricted` runs it):
the settings rows locked, what runs counted, and then one statement that claims within what is left
(`Restrictions`), fair across tenants as CLAIM and across concurrency keys too.
"""

from __future__ import annotations

from typing import Annotated, NamedTuple

from queueflow.stores.postgres.claim.args import ClaimArgs, TenantScope, Turn
from queueflow.stores.postgres.claim.fair_sql import (
    CLAIM_ORDER,
    J_CLAIM_ORDER,
    RESTRICTING,
    claimable,
    lease,
    shares,
    tenants_in_turn,
)
from queueflow.stores.postgres.params import Placeholders
from queueflow.stores.postgres.sql import COLUMNS

# A settings row as the claim and the held-back gauge read it: the limits and the rate bucket.
RESTRICTION_ROWS = """SELECT tenant_id, queue_name, paused, concurrency_limit, key_concurrency_limit,
       rate_jobs, rate_per_seconds, rate_tokens, rate_refilled_at, key_turn
  FROM queueflow.queue_settings"""

# Of the queues $1 some tenant restricts, every restricting row, locked in one global order (tenant,
# queue) so that two claims never wait on each other's locks in a cycle. A claim of a restricted queue holds
# these locks until it commits: claims of one restricted queue run one at a time, and each one sees every job
# the claims before it leased (see `restricted.claim_restricted`).
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


class Restrictions(NamedTuple):
    """What flow control lets a claim of the restricted queues take now, counted under RESTRICTIONS_LOCK
    (`restricted.restrictions` builds it). Each group of arrays is one relation, row by row (PostgreSQL's unnest)."""

    blocked_tenants: Annotated[list[str], "text[]"]
    blocked_queues: Annotated[list[str], "text[]"]
    """(tenant, queue) pairs that may take nothing now: paused, or at their concurrency or rate limit."""
    cap_tenants: Annotated[list[str], "text[]"]
    cap_queues: Annotated[list[str], "text[]"]
    cap_slots: Annotated[list[int], "int[]"]
    """(tenant, queue) pairs under a concurrency or rate limit with room left: at most `slots` jobs."""
    key_limited_tenants: Annotated[list[str], "text[]"]
    key_limited_queues: Annotated[list[str], "text[]"]
    key_limits: Annotated[list[int], "int[]"]
    key_turns: Annotated[list[str | None], "text[]"]
    """(tenant, queue) pairs under a key_concurrency_limit, their limit, and the key their last claim served last."""
    key_slot_tenants: Annotated[list[str], "text[]"]
    key_slot_queues: Annotated[list[str], "text[]"]
    key_slot_keys: Annotated[list[str], "text[]"]
    key_slots: Annotated[list[int], "int[]"]
    """Concurrency keys of key-limited pairs that run jobs and have room left: at most `slots` more (a key that
    runs nothing may take up to the pair's key limit)."""
    blocked_key_tenants: Annotated[list[str], "text[]"]
    blocked_key_queues: Annotated[list[str], "text[]"]
    blocked_keys: Annotated[list[str], "text[]"]
    """Concurrency keys at their limit: none of their jobs."""


_restricted = Placeholders(ClaimArgs, Turn, Restrictions)
_restricted_for_tenant = Placeholders(ClaimArgs, Turn, Restrictions, TenantScope)


def _restricted_claimable(p: Placeholders) -> str:
    """A job a restricted claim may take: due, of the tasks a worker can run, and none of a blocked (tenant, queue)
    or of a concurrency key at its limit — left out of the scan itself, so that a blocked group's backlog never
    fills the candidates and starves the others.

    OFFSET 0 keeps each NOT EXISTS a filter on the rows of the index scan, in index order: without it the planner
    made them anti-joins, which lose that order, so that every probe and share read and sorted all of a tenant's
    jobs (a sequential scan of the table, 18 ms per probe with 10,000 jobs)."""
    return f"""{claimable(p)}
                                  AND NOT EXISTS (SELECT FROM unnest({p.blocked_tenants}, {p.blocked_queues})
                                                           AS b(tenant_id, queue_name)
                                                   WHERE b.tenant_id = j.tenant_id AND b.queue_name = j.queue_name
                                                  OFFSET 0)
                                  AND NOT EXISTS (SELECT FROM unnest({p.blocked_key_tenants}, {p.blocked_key_queues},
                                                                     {p.blocked_keys}) AS bk(tenant_id, queue_name, key)
                                                   WHERE bk.tenant_id = j.tenant_id AND bk.queue_name = j.queue_name
                                                     AND bk.key = j.config->>'concurrency_key'
                                                  OFFSET 0)"""


CANDIDATE = (
    "j.id, j.tenant_id, j.queue_name, j.priority, j.scheduled_at, j.created_at,"
    " j.config->>'concurrency_key' AS concurrency_key"
)

# A job's concurrency key in idx_jobs_keyed (migration 0006), in code-point order: the order keys take turns in.
KEY = "(j.config->>'concurrency_key') COLLATE \"C\""
# The predicate of idx_jobs_keyed, stated so that the planner may read it.
KEYED_PENDING = "j.status IN ('pending', 'retrying') AND j.config ? 'concurrency_key'"


def _keys_in_turn(p: Placeholders, claimable: str) -> str:
    """The CTEs that find the concurrency keys of each key-limited (tenant, queue) among `tenant` (README.md,
    "Fairness"): `key_limited`, those pairs with their key limit and the key their last lease served
    (`key_turns`), and `part`, the keys a claim may take from, each with how many jobs it may give: its part of the
    tenant's share, ceil(share / keys), never more than its free slots (`key_slots`; a key that runs nothing has
    `key_limit`).

    The keys are read in the turn's order, as `tenants_in_turn` reads the tenants: a skip scan of idx_jobs_keyed
    (code-point order), one descent per key, from the first key after the one served last, wrapping around to the
    first key and ending with that one; each key is probed for a claimable job (in claim order, LIMIT 1; none for a
    key at its limit: `claimable` leaves those out). The scan stops once it has found `share` claimable keys, which
    are all a claim can reach (each gives one job then), so a queue with thousands of keys costs a claim the keys
    it serves, not all of them.

    `tenant` holds a (queue, tenant) once per live generation with a ready job (migration 0022): `key_limited` is
    DISTINCT, so that each pair's keys are scanned once.
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
    SELECT DISTINCT tenant.queue_name, tenant.tenant_id, kl.key_limit, kl.key_turn
      FROM tenant
      JOIN unnest({p.key_limited_tenants}, {p.key_limited_queues}, {p.key_limits}, {p.key_turns})
           AS kl(tenant_id, queue_name, key_limit, key_turn)
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
      LEFT JOIN {_key_slots(p)} ON ks.tenant_id = key_scan.tenant_id AND ks.queue_name = key_scan.queue_name
                                   AND ks.key = key_scan.key
     WHERE key_scan.claimable
)"""


def _key_slots(p: Placeholders) -> str:
    return f"unnest({p.key_slot_tenants}, {p.key_slot_queues}, {p.key_slot_keys}, {p.key_slots})" + (
        " AS ks(tenant_id, queue_name, key, slots)"
    )


def _restricted_claim_sql(p: Placeholders, claimable: str) -> str:
    """CLAIM for restricted queues, of the jobs `claimable` holds for, in turns as CLAIM (after `after_tenant`),
    and within a key-limited (tenant, queue) in key turns (`_keys_in_turn`, after its `key_turns` entry), as
    `core.turns.in_turns` orders them.

    `due` holds the candidates: each tenant's share, read per (queue, tenant) in claim order as CLAIM reads it, and
    in a key-limited one each key's `part` too; a key's jobs past its free slots are left out. In a (queue, tenant),
    the keyed jobs of a key-limited one keep their places in claim order (`place`: the nth such job has the place
    of the nth in claim order) and fill them in key turns (`kpos`); every other job keeps its own. A tenant's
    `turn` follows the places, and at most `cap_slots` of a limited (tenant, queue) are taken, the first by place.
    A key with fewer jobs than its part leaves the claim short; the store claims again (`restricted.claim_restricted`),
    and the next rounds of the turn come from the keys that have more.
    """
    keyed_part = f"""SELECT due.* FROM part,
           LATERAL (SELECT * FROM (
                    SELECT {CANDIDATE} FROM queueflow.jobs AS j
                     WHERE j.queue_name = part.queue_name AND j.tenant_id = part.tenant_id AND {KEYED_PENDING}
                       AND {KEY} = part.key AND {claimable}
                     ORDER BY {KEY}, {J_CLAIM_ORDER}
                     LIMIT {p.max_jobs}
                     FOR UPDATE SKIP LOCKED) AS ahead
                     LIMIT least(part.per_key, part.slots)) AS due"""
    tenants = tenants_in_turn(p, f"SELECT q.name FROM unnest({p.queues}) AS q(name)", claimable)
    return f"""{tenants}{_keys_in_turn(p, claimable)},
due AS (
    SELECT due.* FROM {shares(p, CANDIDATE, claimable)}
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
      LEFT JOIN {_key_slots(p)} ON ks.tenant_id = due.tenant_id AND ks.queue_name = due.queue_name
                                   AND ks.key = due.concurrency_key
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
{lease(p)}
 WHERE id = ANY(ARRAY(
       SELECT pl.id
         FROM placed AS pl
         LEFT JOIN unnest({p.cap_tenants}, {p.cap_queues}, {p.cap_slots}) AS cap(tenant_id, queue_name, slots)
                ON cap.tenant_id = pl.tenant_id AND cap.queue_name = pl.queue_name
        WHERE pl.turn <= pl.per_tenant AND (cap.slots IS NULL OR pl.place <= cap.slots)
        ORDER BY pl.turn, pl.tenant_id COLLATE "C" <= {p.after_tenant}, pl.tenant_id COLLATE "C"
        LIMIT {p.max_jobs}))
RETURNING {COLUMNS}
"""


# Parameters: ClaimArgs, Turn, Restrictions.
CLAIM_RESTRICTED = _restricted_claim_sql(_restricted, _restricted_claimable(_restricted))

# CLAIM_RESTRICTED for a tenant-scoped worker key (parameters: ClaimArgs, Turn, Restrictions, TenantScope): a
# scoped key never leases another tenant's job, from a restricted queue either.
CLAIM_RESTRICTED_FOR_TENANT = _restricted_claim_sql(
    _restricted_for_tenant,
    f"j.tenant_id = {_restricted_for_tenant.tenant} AND {_restricted_claimable(_restricted_for_tenant)}",
)

# The token buckets a restricted claim spent from, under the lock RESTRICTIONS_LOCK took: the tokens left, as of the
# later of the claim's `now` ($4) and the bucket's refill time. A claim reads its now before it waits for the lock,
# so the claim before it may have refilled the bucket to a later time; `core.flow.tokens_at` then adds nothing, and
# the tokens left are as of that later time. Written back as of the claim's earlier now, the refill time moved
# backwards and the next claim refilled that interval a second time (4 single-job leasers took 17-20 jobs in 2 s
# of a 5/s limit, burst 5: tests/postgres/test_rate_limit_real_time.py).
SPEND_TOKENS = """
UPDATE queueflow.queue_settings AS s
   SET rate_tokens = b.tokens, rate_refilled_at = GREATEST(s.rate_refilled_at, $4)
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
