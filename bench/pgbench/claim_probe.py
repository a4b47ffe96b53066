"""Timing and explaining one prepared claim without spending its backlog, for the claim-cost programs beside it
(`deadline_claim_cost`, `sequence_claim_cost`): each run in a transaction that is rolled back."""

from __future__ import annotations

import time

import asyncpg


async def timed(connection: asyncpg.Connection, execute: str, *, rows: int = 100) -> float:
    """Seconds `execute` (an EXECUTE of a prepared claim) took; it must have claimed `rows` jobs."""
    transaction = connection.transaction()
    await transaction.start()
    started = time.perf_counter()
    claimed = await connection.fetch(execute)
    elapsed = time.perf_counter() - started
    await transaction.rollback()
    assert len(claimed) == rows, (execute, len(claimed))
    return elapsed


async def plan(connection: asyncpg.Connection, execute: str) -> str:
    """Whether `execute`'s plan reads idx_jobs_claim, and its root's shared buffers, under EXPLAIN ANALYZE."""
    transaction = connection.transaction()
    await transaction.start()
    lines = [row[0] for row in await connection.fetch(f"EXPLAIN (ANALYZE, BUFFERS) {execute}")]
    await transaction.rollback()
    buffers = next(line.strip() for line in lines if "Buffers: shared" in line)
    return f"idx_jobs_claim used: {any('idx_jobs_claim' in line for line in lines)}; {buffers}"
