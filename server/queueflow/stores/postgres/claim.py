"""The claim on PostgreSQL: `JobStore.job_claim` and `job_next_due`, on the shared pool.

A claim is one transaction (BEGIN_CLAIM … COMMIT). It first claims from the queues nobody restricts (CLAIM, or
CLAIM_FOR_TENANT for a tenant-scoped worker key: `claim_sql`), one statement that is the whole claim of a worker
draining a backlog. Only a claim that comes back short goes on to the queues some tenant restricts (pause,
concurrency and rate limits: `restricted_sql`), in the same transaction: if any statement fails, every job the
claim took is pending again, none is lost to a lease nobody holds.

Where CLAIM is likely to be all of it (no tenant scope; one job, or queues known unrestricted), it runs first as a
statement of its own (CLAIM_CALL: one round trip where the transaction takes three), and ends the claim when that
is all the transaction would have done: it came back full, or short with no tenant at its whole share and no queue
restricted. Otherwise the transaction goes on from the jobs it took; those are committed to their leases already,
and the caller gets them even if the transaction fails.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from contextlib import suppress
from datetime import datetime, timedelta
from typing import Any, TypeVar

import asyncpg

from queueflow.core.flow import RateLimit, next_token_at, tokens_at
from queueflow.core.jsonvalue import storable_text
from queueflow.core.turns import KeyTurns, in_turns, last_keys
from queueflow.core.types import ClaimRequest, Job
from queueflow.stores.postgres.claim_sql import (
    BEGIN_CLAIM,
    CLAIM,
    CLAIM_CALL,
    CLAIM_FOR_TENANT,
    DUE_ANY,
    NEXT_DUE,
    RESTRICTED_QUEUES,
    SAVE_TURN,
    ClaimArgs,
    TenantScope,
    Turn,
    TurnOf,
    claim_function_ddl,
)
from queueflow.stores.postgres.connection import Db, Pooled, begun
from queueflow.stores.postgres.params import values
from queueflow.stores.postgres.restricted_sql import (
    CLAIM_RESTRICTED,
    CLAIM_RESTRICTED_FOR_TENANT,
    RESTRICTIONS_LOCK,
    RUNNING_COUNTS,
    RUNNING_KEY_COUNTS,
    SAVE_KEY_TURNS,
    SPEND_TOKENS,
    Restrictions,
)
from queueflow.stores.postgres.rows import job_from_row

# The restricted claim runs under the default plan cache mode, as it always has: BEGIN_CLAIM forced generic plans
# for CLAIM, whose custom plan PostgreSQL would otherwise make on every execution; the restricted claim's statements
# were tuned (tests/postgres/test_claim_plan.py) and measured with the plans PostgreSQL picks by default.
DEFAULT_PLANS = "SET LOCAL plan_cache_mode = auto"

Pair = tuple[str, str]
"""A (tenant_id, queue_name): what flow-control settings are kept for."""

UNRESTRICTED_FRESH = 1.0
"""Seconds a claim trusts that none of its queues is restricted, at most (`PostgresClaims`)."""

MAX_IDLE = 1000
"""Queue lists remembered as idle (`PostgresClaims`); past it, the oldest is forgotten (its next claim is whole)."""

K = TypeVar("K")
V = TypeVar("V")


log = logging.getLogger("queueflow.postgres")


class PostgresClaims(Pooled):
    """The claim, on the shared pool.

    An idle lessee (a worker polling an empty queue, a lease with `wait_seconds` 0) claims again and again and finds
    nothing; each claim is a transaction of four round trips. So the store remembers the queue lists whose last claim
    found nothing, with the count of announcements of new work at that claim's start (`Wakeups.notices`): while
    nothing was announced since, the next claim of the same queues first asks DUE_ANY whether any of their jobs is
    due, one statement, and ends there when none is. The question is exact about what a claim could take (a job
    due by the passing of time announces nothing, and DUE_ANY finds it), so this changes no answer: a claim that
    ran a moment earlier. An announcement, or a claim that takes a job, makes the next claim whole at once, so a
    woken lessee claims without the question first.

    A claim that comes back short asks which of its queues some tenant restricts (RESTRICTED_QUEUES), a round trip
    of its own in every claim of one job (a workflow chain's step, an HTTP worker's single lease). When none is, the
    store remembers it for those queues while no notification came from PostgreSQL (`Wakeups.heard`: a settings
    change in another process NOTIFYs its queue) and for at most `UNRESTRICTED_FRESH`; a settings change in this
    process forgets it at once. Trusting it a moment too long only leaves out a queue restricted meanwhile, as CLAIM
    itself leaves every restricted queue out: no limit is ever passed, and the queue's jobs wait for the next claim.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._idle: dict[tuple[str, ...], int] = {}
        self._unrestricted: dict[tuple[str, ...], tuple[int, float]] = {}
        """Queue lists none of whose queues was restricted: the `Wakeups.heard` count then, and until when."""
        self._restricted: dict[tuple[str, ...], bool] = {}
        """Queue lists some of whose queues were restricted at their last short claim: a single-job claim of
        them takes its transaction at once (it may well come back short, and go on to the restricted queues)."""
        self._claim_columns: list[tuple[str, str]] | None = None
        """CLAIM's result columns and their types, read once (`claim_columns`)."""
        self._one_statement = self._statement_cache_size > 0
        """Whether a claim may call CLAIM_FUNCTION (`_on_connect` makes it on every pooled connection). Not behind a
        transaction-mode pooler (no prepared statement cache): the next statement may run on another server
        connection than the one that made it; nor once a connection turned out not to have it (a role without
        TEMPORARY on the database)."""

    def _heard(self) -> int | None:
        # Only the server's hub counts notifications; with another WorkSignal (tests' own) nothing is remembered.
        heard = getattr(self._wakeups, "heard", None)
        return heard if isinstance(heard, int) else None

    def _known_unrestricted(self, queues: tuple[str, ...]) -> bool:
        known = self._unrestricted.get(queues)
        return known is not None and known[0] == self._heard() and known[1] > time.monotonic()

    def _restrictions_changed(self) -> None:
        self._unrestricted.clear()
        self._restricted.clear()

    def _notices(self) -> int:
        # A WorkSignal other than the server's hub may not count (tests' own): then every idle claim asks first.
        return int(getattr(self._wakeups, "notices", 0))

    async def _on_connect(self, connection: asyncpg.Connection) -> None:
        await super()._on_connect(connection)
        if not self._one_statement:
            return
        with suppress(asyncpg.PostgresError):  # without it, this connection's claims take their transaction
            if self._claim_columns is None:
                self._claim_columns = await claim_columns(connection)
            await connection.execute(claim_function_ddl(self._claim_columns))

    async def job_claim(self, request: ClaimRequest) -> list[Job]:
        queues = queue_names(request.queues)
        tasks = (
            None
            if request.task_names is None
            else [name for name in dict.fromkeys(request.task_names) if storable_text(name)]
        )
        tenant = request.tenant_id
        if not queues or tasks == [] or (tenant is not None and not storable_text(tenant)):
            return []
        args = ClaimArgs(
            queues=queues,
            max_jobs=request.max_jobs,
            now=request.now,
            lease=timedelta(seconds=request.lease_seconds),
            task_names=tasks,
        )
        turn = TurnOf(turn_of=sorted(queues))
        scope = None if tenant is None else TenantScope(tenant=tenant)
        idle_key, notices = tuple(queues), self._notices()
        if self._idle.get(idle_key) == notices:
            async with self._connection() as db:
                if not await db.fetchval(DUE_ANY, queues, request.now):
                    return []
        jobs = await self._claim(request, args, turn, scope)
        _remember(self._idle, idle_key, None if jobs else notices)
        return jobs

    async def _claim(
        self, request: ClaimRequest, args: ClaimArgs, turn: TurnOf, scope: TenantScope | None
    ) -> list[Job]:
        """The claim: first as one statement (CLAIM_CALL, one round trip where the transaction takes three) when
        that may well be all of it — one job (a job taken is all of it), or queues known unrestricted — else, or
        when it was not all, the claim's transaction (`_claim_whole`)."""
        key = tuple(args.queues)
        taken: list[asyncpg.Record] = []
        if (
            scope is None
            and self._one_statement
            and key not in self._restricted
            and (request.max_jobs == 1 or self._known_unrestricted(key))
        ):
            async with self._connection() as db:
                try:
                    taken = await db.fetch(CLAIM_CALL, *values(args, turn))
                except asyncpg.UndefinedFunctionError:
                    self._one_statement = False
            if self._one_statement and self._all_there_is(taken, request.max_jobs, key):
                return _statement_jobs(taken)
        try:
            return await self._claim_whole(request, args, turn, scope, taken)
        except Exception:
            if not taken:
                raise
            # The statement's jobs are committed to this claim's leases: they are the caller's, whatever became
            # of the rest (never lost to a lease nobody holds).
            log.warning("a claim returns the %d jobs it took; going on for more failed", len(taken), exc_info=True)
            return _statement_jobs(taken)

    def _all_there_is(self, rows: list[asyncpg.Record], max_jobs: int, key: tuple[str, ...]) -> bool:
        """Whether the claim's transaction would have taken no more than CLAIM alone took (`rows`): it is full,
        or it came back short with no tenant at its whole share (`_claim_in_turns` would not go round again) and
        none of its queues restricted (it would not look there)."""
        if len(rows) >= max_jobs:
            return True
        if not self._known_unrestricted(key):
            return False
        return not _a_tenant_at_its_share(rows)

    async def _claim_whole(
        self,
        request: ClaimRequest,
        args: ClaimArgs,
        turn: TurnOf,
        scope: TenantScope | None,
        before: list[asyncpg.Record],
    ) -> list[Job]:
        """The claim's transaction: the unrestricted queues (CLAIM or CLAIM_FOR_TENANT), then, when it came back
        short, the restricted ones. A tenant-scoped claim neither reads nor moves the turn: it serves one tenant.
        `before`: the rows a one-statement claim took just now (committed), which this one goes on from."""
        key_turns: KeyTurns = {}
        key = tuple(args.queues)
        async with self._connection() as db, begun(db, BEGIN_CLAIM):
            if scope is None:
                rows = before + await _claim_in_turns(db, _fewer(args, len(before)), turn)
            else:
                rows = await db.fetch(CLAIM_FOR_TENANT, *values(args, scope))
            jobs = [job_from_row(row) for row in rows]
            after = rows[0]["after_tenant"] if rows and scope is None else None
            # CLAIM left out the queues some tenant restricts. Only a claim that came back short may have
            # missed jobs there, so a full one (a worker draining a backlog) costs nothing more.
            if len(jobs) < request.max_jobs and not self._known_unrestricted(key):
                heard = self._heard()
                found = await db.fetch(RESTRICTED_QUEUES, args.queues, turn.turn_of)
                known = None if found or heard is None else (heard, time.monotonic() + UNRESTRICTED_FRESH)
                _remember(self._unrestricted, key, known)
                _remember(self._restricted, key, True if found else None)
                if found:
                    if not rows and scope is None:
                        after = found[0]["after_tenant"]
                    rest = args._replace(
                        queues=[row["queue_name"] for row in found], max_jobs=request.max_jobs - len(jobs)
                    )
                    more, key_turns = await claim_restricted(db, rest, Turn(after_tenant=after), scope)
                    if more and scope is None:
                        served = in_turns(jobs + more, after)[-1].tenant_id
                        await db.execute(SAVE_TURN, turn.turn_of, served)
                    jobs += more
        # RETURNING comes in no particular order; a multi-job lease answers in the order it took the jobs.
        return in_turns(jobs, after, key_turns)

    async def job_next_due(self, queues: Sequence[str], *, now: datetime) -> datetime | None:
        wanted = queue_names(queues)
        if not wanted:
            return None
        async with self._connection() as db:
            rows = await db.fetch(NEXT_DUE, wanted, now)
        due: datetime | None = rows[0]["due"]
        for row in rows:
            if row["rate_jobs"] is None:
                continue  # the one row of a claim whose queues have no rate limit
            rate = RateLimit(row["rate_jobs"], row["rate_per_seconds"])
            token = next_token_at(rate, row["rate_tokens"], row["rate_refilled_at"], now)
            if token is not None and (due is None or token < due):
                due = token
        return due


async def claim_columns(db: Db) -> list[tuple[str, str]]:
    """CLAIM's result columns with their types, as CLAIM_FUNCTION returns them."""
    attributes = (await db.prepare(CLAIM)).get_attributes()
    types = await db.fetchval(
        "SELECT array_agg(format_type(oid, NULL) ORDER BY n) FROM unnest($1::oid[]) WITH ORDINALITY AS t(oid, n)",
        [attribute.type.oid for attribute in attributes],
    )
    return [(attribute.name, sql_type) for attribute, sql_type in zip(attributes, types, strict=True)]


def _remember(table: dict[K, V], key: K, value: V | None) -> None:
    """`table[key] = value` as its newest entry (None: forget `key`); past MAX_IDLE entries the oldest is forgotten
    (its queue list's next claim is whole)."""
    table.pop(key, None)  # re-inserted last: the oldest entry goes first when the table is full
    if value is not None:
        table[key] = value
        if len(table) > MAX_IDLE:
            del table[next(iter(table))]


def queue_names(queues: Sequence[str]) -> list[str]:
    """`queues` once each, in order, without names no row can hold (text PostgreSQL cannot store)."""
    return [queue for queue in dict.fromkeys(queues) if storable_text(queue)]


async def _claim_in_turns(db: Db, args: ClaimArgs, turn: TurnOf) -> list[asyncpg.Record]:
    """CLAIM, again while it comes back short and some tenant took its whole share (`fair_share`): that tenant may
    have more, which the tenants with fewer jobs than their share left room for. Each round claims at least one
    job or ends the claim, and a round's tenants that ran short have no claimable job left, so rounds are few
    (with one tenant, never more than one). A round goes on from the turn the round before it moved (its own
    write, in the same transaction): the tenants that filled their share, in the turn's order, as `in_turns`
    orders the whole claim (the rows keep the first round's `after_tenant`)."""
    rows = await db.fetch(CLAIM, *values(args, turn))
    last = rows
    while len(rows) < args.max_jobs and _a_tenant_at_its_share(last):
        last = await db.fetch(CLAIM, *values(_fewer(args, len(rows)), turn))
        rows += last
    return rows


def _a_tenant_at_its_share(rows: list[asyncpg.Record]) -> bool:
    """Whether some tenant took its whole share (`fair_share`) of a round of CLAIM (`rows`): it may have more, which
    another round would take (none if the round took nothing)."""
    return bool(rows) and max(Counter(row["tenant_id"] for row in rows).values()) >= rows[0]["fair_share"]


def _statement_jobs(rows: list[asyncpg.Record]) -> list[Job]:
    """The jobs of a one-statement claim (CLAIM_CALL's `rows`), in the order it took them."""
    return in_turns([job_from_row(row) for row in rows], rows[0]["after_tenant"] if rows else None)


def _fewer(args: ClaimArgs, claimed: int) -> ClaimArgs:
    """`args` for the rest of a claim that has taken `claimed` jobs."""
    return args._replace(max_jobs=args.max_jobs - claimed)


async def claim_restricted(
    db: Db, args: ClaimArgs, turn: Turn, scope: TenantScope | None
) -> tuple[list[Job], KeyTurns]:
    """CLAIM for queues on which some tenant restricts leasing (`args.queues`), exact under any number of
    concurrent claims, with the same task and tenant (`scope`) filters as CLAIM and CLAIM_FOR_TENANT. Runs inside
    the claim's transaction; returns the jobs and the key turns they were ordered by.

    Why no limit is ever exceeded: every claim of a restricted queue locks all of that queue's restricting
    settings rows (RESTRICTIONS_LOCK) before it counts or claims, and holds them until it commits, so the
    claims of one limited (tenant, queue) run one after another. Each counts the running jobs in a statement
    of its own, after its lock was granted, so it sees every job the claims before it leased (they committed
    before releasing the lock), and claims at most `limit - running` more; the same holds per concurrency_key
    under a key_concurrency_limit (RUNNING_KEY_COUNTS, after the lock too), and for the rate limit, whose token
    bucket lives in the locked row itself: refilled to `now`, spent, and written back (SPEND_TOKENS) before the
    lock is released; so is each key-limited pair's key turn (SAVE_KEY_TURNS), which makes it one turn for all
    processes. Running only goes down outside that lock (complete, fail, cancel, the janitor), which can
    only leave more room than was counted.
    CLAIM (unrestricted queues) never touches these queues' jobs: it skips a queue as soon as one restricting
    row is committed; a claim that read the settings before that commit is ordered before the change, as is a
    job that was already running when a limit was set. Queues nobody restricts take none of these locks.

    The price: claims of a restricted queue run one at a time (every restricting row of the queue is locked,
    a paused tenant's too), and take 4–6 statements instead of one.
    """
    await db.execute(DEFAULT_PLANS)
    settings = await db.fetch(RESTRICTIONS_LOCK, args.queues)
    open_ = [row for row in settings if not row["paused"]]
    paused = [(row["tenant_id"], row["queue_name"]) for row in settings if row["paused"]]
    limit_of = {_pair(row): row["concurrency_limit"] for row in open_ if row["concurrency_limit"] is not None}
    key_limit_of = {
        _pair(row): row["key_concurrency_limit"] for row in open_ if row["key_concurrency_limit"] is not None
    }
    key_turns = {_pair(row): row["key_turn"] for row in open_ if _pair(row) in key_limit_of}
    # Each rate limit's bucket, refilled to now: the pair may take floor(tokens) jobs in this claim.
    tokens = {
        _pair(row): tokens_at(
            RateLimit(row["rate_jobs"], row["rate_per_seconds"]), row["rate_tokens"], row["rate_refilled_at"], args.now
        )
        for row in open_
        if row["rate_jobs"] is not None
    }
    running: dict[Pair, int] = {}
    if limit_of:
        rows = await db.fetch(RUNNING_COUNTS, *_columns(limit_of))
        running = {_pair(row): row["running"] for row in rows}
    running_keys: dict[tuple[str, str, str], int] = {}
    if key_limit_of:
        rows = await db.fetch(RUNNING_KEY_COUNTS, *_columns(key_limit_of))
        running_keys = {(row["tenant_id"], row["queue_name"], row["key"]): row["running"] for row in rows}
    # Rounds: a round's candidates are the first `max_jobs` rows the scan finds, and the caps may cut some; the
    # next round leaves out every group a round filled, so it finds what lay behind them. Each round claims at
    # least one job while any may be claimed (the first candidate is never cut), so there are at most `max_jobs`
    # rounds, and almost always one.
    claimed: list[asyncpg.Record] = []
    while len(claimed) < args.max_jobs:
        left = _fewer(args, len(claimed))
        now_allowed = restrictions(paused, limit_of, running, tokens, key_limit_of, running_keys, key_turns)
        if scope is None:
            rows = await db.fetch(CLAIM_RESTRICTED, *values(left, turn, now_allowed))
        else:
            rows = await db.fetch(CLAIM_RESTRICTED_FOR_TENANT, *values(left, turn, now_allowed, scope))
        if not rows:
            break
        claimed += rows
        for row in rows:
            pair = _pair(row)
            if pair in limit_of:
                running[pair] = running.get(pair, 0) + 1
            if pair in tokens:
                tokens[pair] -= 1
            key = row["config"].get("concurrency_key")
            if pair in key_limit_of and key is not None:
                running_keys[(*pair, key)] = running_keys.get((*pair, key), 0) + 1
    if tokens:
        await db.execute(SPEND_TOKENS, *_columns(tokens), list(tokens.values()), args.now)
    jobs = in_turns((job_from_row(row) for row in claimed), turn.after_tenant, key_turns)
    if served := last_keys(jobs, key_turns):
        await db.execute(SAVE_KEY_TURNS, *_columns(served), list(served.values()))
    return jobs, key_turns


def restrictions(
    paused: list[Pair],
    limit_of: dict[Pair, int],
    running: dict[Pair, int],
    tokens: dict[Pair, float],
    key_limit_of: dict[Pair, int],
    running_keys: dict[tuple[str, str, str], int],
    key_turns: dict[Pair, str | None],
) -> Restrictions:
    """What the settings (`paused`, the concurrency limits `limit_of` and `key_limit_of`, the rate buckets'
    `tokens`) leave a claim now, given what runs (`running`, `running_keys`) and whose key turn it is."""
    blocked = list(paused)
    caps: list[tuple[str, str, int]] = []
    for pair in limit_of.keys() | tokens.keys():
        room = [limit_of[pair] - running.get(pair, 0)] if pair in limit_of else []
        room += [math.floor(tokens[pair])] if pair in tokens else []
        slots = min(room)
        if slots > 0:
            caps.append((*pair, slots))
        else:
            blocked.append(pair)
    key_slots: list[tuple[str, str, str, int]] = []
    blocked_keys: list[tuple[str, str, str]] = []
    for (tenant, queue, key), count in running_keys.items():
        slots = key_limit_of[tenant, queue] - count
        if slots > 0:
            key_slots.append((tenant, queue, key, slots))
        else:
            blocked_keys.append((tenant, queue, key))
    key_limited = list(key_limit_of)
    return Restrictions(
        blocked_tenants=[t for t, _ in blocked],
        blocked_queues=[q for _, q in blocked],
        cap_tenants=[t for t, _, _ in caps],
        cap_queues=[q for _, q, _ in caps],
        cap_slots=[n for _, _, n in caps],
        key_limited_tenants=[t for t, _ in key_limited],
        key_limited_queues=[q for _, q in key_limited],
        key_limits=[key_limit_of[pair] for pair in key_limited],
        key_turns=[key_turns[pair] for pair in key_limited],
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
