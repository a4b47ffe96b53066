"""The restricted claim: the queues on which some tenant restricts leasing (pause, concurrency limits, rate
limits), claimed inside the claim's transaction once the unrestricted queues came back short (`claims`). Its SQL
is `restricted_sql`.

Why no limit is ever exceeded: every claim of a restricted queue locks all of that queue's restricting settings
rows (RESTRICTIONS_LOCK) before it counts or claims, and holds them until it commits, so the claims of one limited
(tenant, queue) run one after another. Each counts the running jobs in a statement of its own, after its lock was
granted, so it sees every job the claims before it leased (they committed before releasing the lock), and claims
at most `limit - running` more; the same holds per concurrency_key under a key_concurrency_limit
(RUNNING_KEY_COUNTS, after the lock too), and for the rate limit, whose token bucket lives in the locked row itself:
refilled to `now`, spent, and written back (SPEND_TOKENS) before the lock is released; so is each key-limited
pair's key turn (SAVE_KEY_TURNS), which makes it one turn for all processes. Running only goes down outside that
lock (complete, fail, cancel, the janitor), which can only leave more room than was counted.
CLAIM (unrestricted queues) never touches these queues' jobs: it skips a queue as soon as one restricting row is
committed; a claim that read the settings before that commit is ordered before the change, as is a job that was
already running when a limit was set. Queues nobody restricts take none of these locks.

The price: claims of a restricted queue run one at a time (every restricting row of the queue is locked, a paused
tenant's too), and take 4–6 statements instead of one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import asyncpg

from queueflow.core.flow import RateLimit, tokens_at
from queueflow.core.turns import KeyTurns, in_turns, last_keys
from queueflow.core.types import Job
from queueflow.stores.postgres.claim.args import ClaimArgs, TenantScope, Turn, fewer
from queueflow.stores.postgres.claim.restricted_sql import (
    CLAIM_RESTRICTED,
    CLAIM_RESTRICTED_FOR_TENANT,
    RESTRICTIONS_LOCK,
    RUNNING_COUNTS,
    RUNNING_KEY_COUNTS,
    SAVE_KEY_TURNS,
    SPEND_TOKENS,
    Restrictions,
)
from queueflow.stores.postgres.connection import Db
from queueflow.stores.postgres.params import values
from queueflow.stores.postgres.rows import job_from_row

# The restricted claim runs under the default plan cache mode, as it always has: BEGIN_CLAIM forced generic plans
# for CLAIM, whose custom plan PostgreSQL would otherwise make on every execution; the restricted claim's statements
# were tuned (tests/postgres/test_claim_plan.py) and measured with the plans PostgreSQL picks by default.
DEFAULT_PLANS = "SET LOCAL plan_cache_mode = auto"

Pair = tuple[str, str]
"""A (tenant_id, queue_name): what flow-control settings are kept for."""

KeyOf = tuple[str, str, str]
"""A (tenant_id, queue_name, concurrency_key)."""


@dataclass
class Limits:
    """The settings of the restricted queues, read under RESTRICTIONS_LOCK, and what runs under them; the rounds
    of a claim count their own jobs in (`took`)."""

    paused: list[Pair]
    limit_of: dict[Pair, int]
    key_limit_of: dict[Pair, int]
    key_turns: dict[Pair, str | None]
    tokens: dict[Pair, float]
    """Each rate limit's bucket, refilled to the claim's now: the pair may take floor(tokens) jobs."""
    running: dict[Pair, int] = field(default_factory=dict)
    running_keys: dict[KeyOf, int] = field(default_factory=dict)

    def took(self, row: asyncpg.Record) -> None:
        """A round of the claim took the job `row`: one more running, one token fewer."""
        pair = _pair(row)
        if pair in self.limit_of:
            self.running[pair] = self.running.get(pair, 0) + 1
        if pair in self.tokens:
            self.tokens[pair] -= 1
        key = row["config"].get("concurrency_key")
        if pair in self.key_limit_of and key is not None:
            self.running_keys[(*pair, key)] = self.running_keys.get((*pair, key), 0) + 1


async def claim_restricted(
    db: Db, args: ClaimArgs, turn: Turn, scope: TenantScope | None
) -> tuple[list[Job], KeyTurns]:
    """CLAIM for queues on which some tenant restricts leasing (`args.queues`), exact under any number of
    concurrent claims (the module's docstring says why), with the same task and tenant (`scope`) filters as CLAIM
    and CLAIM_FOR_TENANT. Runs inside the claim's transaction; returns the jobs and the key turns they were ordered
    by, and leaves the spent tokens and the moved key turns written."""
    await db.execute(DEFAULT_PLANS)
    limits = await _locked_limits(db, args)
    claimed = await _rounds(db, args, turn, scope, limits)
    if limits.tokens:
        await db.execute(SPEND_TOKENS, *_columns(limits.tokens), list(limits.tokens.values()), args.now)
    jobs = in_turns((job_from_row(row) for row in claimed), turn.after_tenant, limits.key_turns)
    if served := last_keys(jobs, limits.key_turns):
        await db.execute(SAVE_KEY_TURNS, *_columns(served), list(served.values()))
    return jobs, limits.key_turns


async def _locked_limits(db: Db, args: ClaimArgs) -> Limits:
    """Every restricting settings row of `args.queues`, locked until the claim commits, and then (statements of
    their own, so that they see what the lock's previous holder committed) what runs under their limits."""
    settings = await db.fetch(RESTRICTIONS_LOCK, args.queues)
    open_ = [row for row in settings if not row["paused"]]
    key_limit_of = {
        _pair(row): row["key_concurrency_limit"] for row in open_ if row["key_concurrency_limit"] is not None
    }
    limits = Limits(
        paused=[_pair(row) for row in settings if row["paused"]],
        limit_of={_pair(row): row["concurrency_limit"] for row in open_ if row["concurrency_limit"] is not None},
        key_limit_of=key_limit_of,
        key_turns={_pair(row): row["key_turn"] for row in open_ if _pair(row) in key_limit_of},
        tokens={
            _pair(row): tokens_at(
                RateLimit(row["rate_jobs"], row["rate_per_seconds"]),
                row["rate_tokens"],
                row["rate_refilled_at"],
                args.now,
            )
            for row in open_
            if row["rate_jobs"] is not None
        },
    )
    if limits.limit_of:
        rows = await db.fetch(RUNNING_COUNTS, *_columns(limits.limit_of))
        limits.running = {_pair(row): row["running"] for row in rows}
    if limits.key_limit_of:
        rows = await db.fetch(RUNNING_KEY_COUNTS, *_columns(limits.key_limit_of))
        limits.running_keys = {(row["tenant_id"], row["queue_name"], row["key"]): row["running"] for row in rows}
    return limits


async def _rounds(
    db: Db, args: ClaimArgs, turn: Turn, scope: TenantScope | None, limits: Limits
) -> list[asyncpg.Record]:
    """CLAIM_RESTRICTED in rounds: a round's candidates are the first `max_jobs` rows the scan finds, and the caps
    may cut some; the next round leaves out every group a round filled, so it finds what lay behind them. Each
    round claims at least one job while any may be claimed (the first candidate is never cut), so there are at
    most `max_jobs` rounds, and almost always one."""
    claimed: list[asyncpg.Record] = []
    while len(claimed) < args.max_jobs:
        left = fewer(args, len(claimed))
        allowed = restrictions(limits)
        if scope is None:
            rows = await db.fetch(CLAIM_RESTRICTED, *values(left, turn, allowed))
        else:
            rows = await db.fetch(CLAIM_RESTRICTED_FOR_TENANT, *values(left, turn, allowed, scope))
        if not rows:
            break
        claimed += rows
        for row in rows:
            limits.took(row)
    return claimed


def restrictions(limits: Limits) -> Restrictions:
    """What the settings (paused pairs, the concurrency limits, the rate buckets' tokens) leave a claim now, given
    what runs and whose key turn it is."""
    blocked = list(limits.paused)
    caps: list[tuple[str, str, int]] = []
    for pair in limits.limit_of.keys() | limits.tokens.keys():
        room = [limits.limit_of[pair] - limits.running.get(pair, 0)] if pair in limits.limit_of else []
        room += [math.floor(limits.tokens[pair])] if pair in limits.tokens else []
        slots = min(room)
        if slots > 0:
            caps.append((*pair, slots))
        else:
            blocked.append(pair)
    key_slots: list[tuple[str, str, str, int]] = []
    blocked_keys: list[KeyOf] = []
    for (tenant, queue, key), count in limits.running_keys.items():
        slots = limits.key_limit_of[tenant, queue] - count
        if slots > 0:
            key_slots.append((tenant, queue, key, slots))
        else:
            blocked_keys.append((tenant, queue, key))
    key_limited = list(limits.key_limit_of)
    return Restrictions(
        blocked_tenants=[t for t, _ in blocked],
        blocked_queues=[q for _, q in blocked],
        cap_tenants=[t for t, _, _ in caps],
        cap_queues=[q for _, q, _ in caps],
        cap_slots=[n for _, _, n in caps],
        key_limited_tenants=[t for t, _ in key_limited],
        key_limited_queues=[q for _, q in key_limited],
        key_limits=[limits.key_limit_of[pair] for pair in key_limited],
        key_turns=[limits.key_turns[pair] for pair in key_limited],
        key_slot_tenants=[t for t, _, _, _ in key_slots],
        key_slot_queues=[q for _, q, _, _ in key_slots],
        key_slot_keys=[k for _, _, k, _ in key_slots],
        key_slots=[n for _, _, _, n in key_slots],
        blocked_key_tenants=[t for t, _, _ in blocked_keys],
        blocked_key_queues=[q for _, q, _ in blocked_keys],
        blocked_keys=[k for _, _, k in blocked_keys],
    )


def _pair(row: asyncpg.Record) -> Pair:
    return row["tenant_id"], row["queue_name"]


def _columns(pairs: Iterable[Pair]) -> tuple[list[str], list[str]]:
    """The tenants and the queues of `pairs` (or of a dict's keys), as two arrays for unnest(), in order."""
    listed = list(pairs)
    return [t for t, _ in listed], [q for _, q in listed]
