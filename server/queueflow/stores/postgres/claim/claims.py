"""`PostgresClaims`: the port's `job_claim` and `job_next_due` on the shared pool, in the order a claim runs (the
package's docstring walks it through)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from queueflow.core.flow import RateLimit, next_token_at
from queueflow.core.jsonvalue import storable_text
from queueflow.core.turns import KeyTurns, in_turns
from queueflow.core.types import ClaimRequest, Job
from queueflow.stores.postgres.claim.args import ClaimArgs, TenantScope, Turn, TurnOf, fewer
from queueflow.stores.postgres.claim.caches import IdleQueues, QueueList, UnrestrictedQueues
from queueflow.stores.postgres.claim.function import CLAIM_CALL
from queueflow.stores.postgres.claim.restricted import claim_restricted
from queueflow.stores.postgres.claim.unrestricted_sql import (
    BEGIN_CLAIM,
    CLAIM,
    CLAIM_FOR_TENANT,
    DUE_ANY,
    NEXT_DUE,
    RESTRICTED_QUEUES,
    SAVE_TURN,
)
from queueflow.stores.postgres.connection import Db, Pooled, begun
from queueflow.stores.postgres.params import values
from queueflow.stores.postgres.rows import job_from_row

log = logging.getLogger("queueflow.postgres")


class PostgresClaims(Pooled):
    """The claim, on the shared pool, with what it remembers between claims (`caches`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._idle_queues = IdleQueues(self._notices)
        self._unrestricted_queues = UnrestrictedQueues(self._heard)
        self._one_statement = True
        """Whether a claim may call the claim function (`function`): until the database turned out not to have
        it (not migrated to 0011 yet), when every claim takes its transaction."""

    def _heard(self) -> int | None:
        # Only the server's hub counts notifications; with another WorkSignal (tests' own) nothing is remembered.
        heard = getattr(self._wakeups, "heard", None)
        return heard if isinstance(heard, int) else None

    def _notices(self) -> int:
        # A WorkSignal other than the server's hub may not count (tests' own): then every idle claim asks first.
        return int(getattr(self._wakeups, "notices", 0))

    def _restrictions_changed(self) -> None:
        self._unrestricted_queues.forget()

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
        scope = None if tenant is None else TenantScope(tenant=tenant)
        key, announced = tuple(queues), self._idle_queues.announced()
        if self._idle_queues.still_idle(key, announced):
            async with self._connection() as db:
                if not await db.fetchval(DUE_ANY, queues, request.now):
                    return []
        jobs = await self._claim(args, TurnOf(turn_of=sorted(queues)), scope)
        self._idle_queues.claimed(key, bool(jobs), announced)
        return jobs

    async def _claim(self, args: ClaimArgs, turn: TurnOf, scope: TenantScope | None) -> list[Job]:
        """The claim: first as one statement (CLAIM_CALL, one round trip where the transaction takes three) when
        that may well be all of it — one job (a job taken is all of it), or queues known unrestricted — else, or
        when it was not all, the claim's transaction (`_claim_whole`)."""
        key = tuple(args.queues)
        taken: list[asyncpg.Record] = []
        if scope is None and self._one_statement and (args.max_jobs == 1 or self._unrestricted_queues.known(key)):
            async with self._connection() as db:
                try:
                    taken = await db.fetch(CLAIM_CALL, *values(args, turn))
                except asyncpg.UndefinedFunctionError:
                    self._one_statement = False
            if self._one_statement and self._all_there_is(taken, args.max_jobs, key):
                return _statement_jobs(taken)
        try:
            return await self._claim_whole(args, turn, scope, taken)
        except Exception:
            if not taken:
                raise
            # The statement's jobs are committed to this claim's leases: they are the caller's, whatever became
            # of the rest (never lost to a lease nobody holds).
            log.warning("a claim returns the %d jobs it took; going on for more failed", len(taken), exc_info=True)
            return _statement_jobs(taken)

    def _all_there_is(self, rows: list[asyncpg.Record], max_jobs: int, key: QueueList) -> bool:
        """Whether the claim's transaction would have taken no more than CLAIM alone took (`rows`): it is full,
        or it came back short with no tenant at its whole share (`claim_in_turns` would not go round again) and
        none of its queues restricted (it would not look there)."""
        if len(rows) >= max_jobs:
            return True
        if not self._unrestricted_queues.known(key):
            return False
        return not _a_tenant_at_its_share(rows)

    async def _claim_whole(
        self, args: ClaimArgs, turn: TurnOf, scope: TenantScope | None, before: list[asyncpg.Record]
    ) -> list[Job]:
        """The claim's transaction: the unrestricted queues (CLAIM or CLAIM_FOR_TENANT), then, when it came back
        short, the restricted ones. A tenant-scoped claim neither reads nor moves the turn: it serves one tenant.
        `before`: the rows a one-statement claim took just now (committed), which this one goes on from."""
        key_turns: KeyTurns = {}
        async with self._connection() as db, begun(db, BEGIN_CLAIM):
            if scope is None:
                rows = before + await claim_in_turns(db, fewer(args, len(before)), turn)
            else:
                rows = await db.fetch(CLAIM_FOR_TENANT, *values(args, scope))
            jobs = [job_from_row(row) for row in rows]
            after = rows[0]["after_tenant"] if rows and scope is None else None
            # CLAIM left out the queues some tenant restricts. Only a claim that came back short may have
            # missed jobs there, so a full one (a worker draining a backlog) costs nothing more.
            if len(jobs) < args.max_jobs and not self._unrestricted_queues.known(tuple(args.queues)):
                found = await self._restricted_of(db, args, turn)
                if found:
                    if not rows and scope is None:
                        after = found[0]["after_tenant"]
                    rest = args._replace(
                        queues=[row["queue_name"] for row in found], max_jobs=args.max_jobs - len(jobs)
                    )
                    more, key_turns = await claim_restricted(db, rest, Turn(after_tenant=after), scope)
                    if more and scope is None:
                        served = in_turns(jobs + more, after)[-1].tenant_id
                        await db.execute(SAVE_TURN, turn.turn_of, served)
                    jobs += more
        # RETURNING comes in no particular order; a multi-job lease answers in the order it took the jobs.
        return in_turns(jobs, after, key_turns)

    async def _restricted_of(self, db: Db, args: ClaimArgs, turn: TurnOf) -> list[asyncpg.Record]:
        """Which of the claim's queues some tenant restricts (with the turn, for a claim that took nothing yet),
        remembered for the next claims of these queues (`caches`)."""
        key, heard = tuple(args.queues), self._unrestricted_queues.heard()
        found = await db.fetch(RESTRICTED_QUEUES, args.queues, turn.turn_of)
        self._unrestricted_queues.learnt(key, restricted=bool(found), heard=heard)
        return found

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


def queue_names(queues: Sequence[str]) -> list[str]:
    """`queues` once each, in order, without names no row can hold (text PostgreSQL cannot store)."""
    return [queue for queue in dict.fromkeys(queues) if storable_text(queue)]


async def claim_in_turns(db: Db, args: ClaimArgs, turn: TurnOf) -> list[asyncpg.Record]:
    """CLAIM, again while it comes back short and some tenant took its whole share (`fair_share`): that tenant may
    have more, which the tenants with fewer jobs than their share left room for. Each round claims at least one
    job or ends the claim, and a round's tenants that ran short have no claimable job left, so rounds are few
    (with one tenant, never more than one). A round goes on from the turn the round before it moved (its own
    write, in the same transaction): the tenants that filled their share, in the turn's order, as `in_turns`
    orders the whole claim (the rows keep the first round's `after_tenant`)."""
    rows = await db.fetch(CLAIM, *values(args, turn))
    last = rows
    while len(rows) < args.max_jobs and _a_tenant_at_its_share(last):
        last = await db.fetch(CLAIM, *values(fewer(args, len(rows)), turn))
        rows += last
    return rows


def _a_tenant_at_its_share(rows: list[asyncpg.Record]) -> bool:
    """Whether some tenant took its whole share (`fair_share`) of a round of CLAIM (`rows`): it may have more, which
    another round would take (none if the round took nothing)."""
    return bool(rows) and max(Counter(row["tenant_id"] for row in rows).values()) >= rows[0]["fair_share"]


def _statement_jobs(rows: list[asyncpg.Record]) -> list[Job]:
    """The jobs of a one-statement claim (CLAIM_CALL's `rows`), in the order it took them."""
    return in_turns([job_from_row(row) for row in rows], rows[0]["after_tenant"] if rows else None)
