"""Unique jobs in the PostgreSQL store: an insert whose items carry `unique` rules (`core.unique`), on the shared
pool. The key's row in `queueflow.unique_keys` is the lock every enqueue of the key takes (the SQL function's too;
migration 0011 says why a row and not an index or an advisory lock)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import asyncpg

from queueflow.core.errors import StoreUnavailable
from queueflow.core.types import Job, OnConflict, UniqueOutcome, UniqueRule
from queueflow.core.unique import Ask, Decision, Sorted, resolve, sort_items, states_of, window
from queueflow.stores.postgres.errors import json_text
from queueflow.stores.postgres.rows import job_from_row, job_insert
from queueflow.stores.postgres.sql import COLUMNS, SELECT_BY_KEYS

# Upserted rather than inserted: ON CONFLICT DO UPDATE locks the row whether it was there or not, in one statement.
# In key order (the database's), as every enqueue takes them: two batches of the same keys never deadlock. A row
# this statement inserted (xmax 0) is a key no enqueue ever committed before: it has no jobs to look up, since every
# job with a key is inserted after its key's row, and key rows are never deleted. Only the other keys come back:
# a batch of new keys reads nothing back.
LOCK_KEYS = """
WITH locked AS (
    INSERT INTO queueflow.unique_keys (tenant_id, key)
    SELECT t, k FROM unnest($1::text[], $2::text[]) AS u(t, k) ORDER BY t, k
    ON CONFLICT (tenant_id, key) DO UPDATE SET key = excluded.key
    RETURNING tenant_id, key, xmax = 0 AS fresh)
SELECT tenant_id, key FROM locked WHERE NOT fresh
"""

# Each item's existing job: the newest of its tenant and key in its states (a comma-joined list), or created in its
# window [since, until). A statement after LOCK_KEYS, so it sees every enqueue of the key committed before ours.
_FOUND = """
SELECT a.n, f.* FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[])
       WITH ORDINALITY AS a(t, k, states, since, until, n)
 CROSS JOIN LATERAL (
     SELECT {columns} FROM queueflow.jobs AS j
      WHERE j.tenant_id = a.t AND j.unique_key = a.k AND j.unique_key IS NOT NULL
        AND (a.since IS NULL OR (j.created_at >= a.since AND j.created_at < a.until))
        AND (a.states IS NULL OR j.status = ANY (string_to_array(a.states, ',')))
      ORDER BY j.created_at DESC, j.id DESC LIMIT 1{lock}) AS f
"""
FOUND = _FOUND.format(columns=", ".join(f"j.{c.strip()}" for c in COLUMNS.split(",")), lock="")
# A job a `replace` may rewrite is locked as it is read: claims skip locked rows, so none starts it meanwhile.
FOUND_FOR_UPDATE = _FOUND.format(columns=", ".join(f"j.{c.strip()}" for c in COLUMNS.split(",")), lock=" FOR UPDATE")

# The lookup planned for the table as it is now, on every call: a generic plan made while the jobs table was nearly
# empty (a new database; after a TRUNCATE and ANALYZE) kept scanning it whole for each item as it grew — 1,000-item
# batches went from 90 ms to 5 s in ten batches of 1,000 (a custom plan probes idx_jobs_unique_key: flat at 90 ms).
CUSTOM_PLANS = "SET LOCAL plan_cache_mode = force_custom_plan"

REPLACE = """
WITH replaced AS (
    UPDATE queueflow.jobs AS j
       SET payload = u.payload::jsonb, priority = u.priority, metadata = u.metadata::jsonb,
           scheduled_at = u.scheduled_at
      FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::timestamptz[])
           AS u(id, payload, priority, metadata, scheduled_at)
     WHERE j.id = u.id
 RETURNING j.queue_name)
SELECT pg_notify('queueflow_work', queue_name) FROM (SELECT DISTINCT queue_name FROM replaced) AS q
"""

Result = tuple[Job, bool | UniqueOutcome]


async def insert_unique(
    db: asyncpg.Connection,
    jobs: Sequence[Job],
    rules: Sequence[UniqueRule | None],
    announce: Callable[[Iterable[str]], None],
) -> list[Result]:
    """Insert checked `jobs` under their rules, inside the caller's transaction: lock the keys, settle the
    idempotency keys first, read each rule's existing job, `resolve`, then write. A `Duplicate` raised by `resolve`
    rolls the whole batch back."""
    keys = sorted({(job.tenant_id, rule.key) for job, rule in zip(jobs, rules, strict=True) if rule is not None})
    known = {tuple(row) for row in await db.fetch(LOCK_KEYS, [tenant for tenant, _ in keys], [key for _, key in keys])}
    items = sort_items(jobs, rules, await _idempotent(db, jobs))
    found = await _found(db, [ask for ask in items.asking if (ask[1].tenant_id, ask[2].key) in known])
    several = len(jobs) > 1
    asks = [Ask(job, rule, found.get(index), index if several else None) for index, job, rule in items.asking]
    decisions = {index: decision for (index, _, _), decision in zip(items.asking, resolve(asks), strict=True)}
    return await _write(db, jobs, items, decisions, announce)


async def _idempotent(db: asyncpg.Connection, jobs: Sequence[Job]) -> dict[tuple[str, str], Job]:
    keyed = {(job.tenant_id, job.idempotency_key) for job in jobs if job.idempotency_key is not None}
    if not keyed:
        return {}
    rows = await db.fetch(SELECT_BY_KEYS, [t for t, _ in keyed], [k for _, k in keyed])
    return {(row["tenant_id"], row["idempotency_key"]): job_from_row(row) for row in rows}


async def _found(db: asyncpg.Connection, asking: Sequence[tuple[int, Job, UniqueRule]]) -> dict[int, Job]:
    """Each asking item's existing job (by its index), read under the keys' locks."""
    found: dict[int, Job] = {}
    if asking:
        await db.execute(CUSTOM_PLANS)
    for lock in (False, True):
        mine = [ask for ask in asking if (ask[2].on_conflict is OnConflict.REPLACE) is lock]
        if not mine:
            continue
        args: list[list[Any]] = [[], [], [], [], []]
        texts: dict[tuple[object, ...], str | None] = {}  # a rule's statuses as the lookup takes them, per shape
        for _, job, rule in mine:
            shape = (rule.states, rule.period_seconds)
            if shape not in texts:
                states = states_of(rule)
                texts[shape] = None if states is None else ",".join(sorted(states))
            bounds = window(rule, job.created_at)
            args[0].append(job.tenant_id)
            args[1].append(rule.key)
            args[2].append(texts[shape])
            args[3].append(None if bounds is None else bounds[0])
            args[4].append(None if bounds is None else bounds[1])
        rows = await db.fetch(FOUND_FOR_UPDATE if lock else FOUND, *args)
        found.update({mine[row["n"] - 1][0]: job_from_row(row) for row in rows})
    return found


async def _write(
    db: asyncpg.Connection,
    jobs: Sequence[Job],
    items: Sorted,
    decisions: dict[int, Decision],
    announce: Callable[[Iterable[str]], None],
) -> list[Result]:
    new = [
        job
        for index, job in enumerate(jobs)
        if index not in items.settled and index not in items.repeats and (
            index not in decisions or decisions[index].outcome is UniqueOutcome.CREATED
        )
    ]  # fmt: skip
    inserted: set[str] = set()
    if new:
        # Only an idempotency key can conflict: without one every row sent is inserted, and no id needs to come back.
        keyed = any(job.idempotency_key is not None for job in new)
        statement, values = job_insert(new, returning=keyed, unique=True)
        answered = await db.fetch(statement, *values)
        inserted = {row["id"] for row in answered} if keyed else {job.id for job in new}
        announce(job.queue_name for job in new if job.id in inserted)
    # The last decision of a job replaced twice in one batch is what it becomes.
    replaced = {d.job.id: d.job for d in decisions.values() if d.outcome is UniqueOutcome.REPLACED}
    if replaced:
        rows = list(replaced.values())
        await db.execute(
            REPLACE,
            [job.id for job in rows],
            [json_text(job.payload, ("payload",)) for job in rows],
            [job.priority for job in rows],
            [json_text(job.metadata, ("metadata",)) for job in rows],
            [job.scheduled_at for job in rows],
        )
        announce(job.queue_name for job in rows)
    lost = [job for job in new if job.id not in inserted]
    late = await _idempotent(db, lost) if lost else {}
    results: list[Result] = []
    for index, job in enumerate(jobs):
        if index in items.settled:
            results.append((items.settled[index], False))
        elif index in items.repeats:
            results.append((results[items.repeats[index]][0], False))
        elif index in decisions and decisions[index].outcome is not UniqueOutcome.CREATED:
            decision = decisions[index]
            results.append((replaced.get(decision.job.id, decision.job), decision.outcome))
        elif job.id in inserted:
            results.append((job, True))
        else:
            # Its idempotency key was taken by a concurrent enqueue (of another unique key) since we read.
            existing = late.get((job.tenant_id, job.idempotency_key or ""))
            if existing is None:
                raise StoreUnavailable("a job with a repeated idempotency key vanished during the insert")
            results.append((existing, False))
    return results
