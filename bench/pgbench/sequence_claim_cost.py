"""What sequences (issue 43) cost the claim: `python -m bench.pgbench.sequence_claim_cost postgresql://…/scratch` on a
database `queueflow migrate` built. The scratch database's jobs are deleted first (TRUNCATE: a DELETE of a backlog
in sequences fires migration 0021's trigger for each holding job, each probing an index full of the statement's own
dead entries — minutes for this backlog). `make bench` runs `measure` on its
raw database (`figures.sequence_claims`).

Three queues of 100,000 pending jobs in 10 tenants (job i in tenant i mod 10): `plain` (no sequence), `spread`
(1,000 sequences, job i in sequence i mod 1,000: each sequence's head among the first jobs in claim order) and
`runs` (1,000 sequences of 100 consecutive ids of one tenant: in claim order a head, then the 99 it holds back — the
worst layout for a claim that reads what sequences hold back). A tenth of the issue's 1,000,000 jobs in 10,000
sequences: the backlog is built in well under a minute, and the claim reads a tenant's range of idx_jobs_claim only as
far as its share, so the ratio depends on the layout rather than the size (an index one level deeper at most). Jobs
are inserted as enqueues write them: migration 0021's trigger flags those that wait behind an earlier job of their
sequence. A claim of 100 (generic plans, as the claim function runs them), rolled back each time so that the backlog
stays, in alternating pairs:

1. `plain` by the code's CLAIM against the same text without the sequence condition: what jobs without a sequence
   pay for the feature.
2. `spread` and `runs` against `plain`, all by the code's CLAIM: a backlog in sequences against one without.

Prints each one's median, the paired median ratios, and each plan's buffers.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
from dataclasses import dataclass

import asyncpg
from queueflow.stores.postgres.claim.args import ClaimArgs, TurnOf
from queueflow.stores.postgres.claim.fair_sql import SEQUENCE_FREE
from queueflow.stores.postgres.claim.unrestricted_sql import CLAIM
from queueflow.stores.postgres.params import sql_types

from bench.pgbench.claim_probe import plan, timed

CONDITION = f" AND (j.sequence_key IS NULL OR {SEQUENCE_FREE})"
WITHOUT = CLAIM.replace(CONDITION, "")
PAIRS = 120
WARM_UP = 20
VACUUM_EVERY = 20
"""Pairs between two VACUUMs. Each rolled-back claim leaves a dead index entry for each job it took, at the front of
its sequence's range of idx_jobs_sequence, where the next claim's probe of that sequence starts: without a vacuum the
same 100 heads, claimed hundreds of times, make every probe read past hundreds of them (in use, a sequence gathers one
per finished job until autovacuum, which a busy jobs table gets often)."""
JOBS = 100_000
PLAIN, WITHOUT_IT = "plain, with the condition", "plain, without it"
SPREAD, RUNS = "spread (sequences of 100, interleaved)", "runs (sequences of 100 consecutive ids)"


@dataclass(frozen=True, slots=True)
class Measured:
    jobs: int
    pairs: int
    medians_ms: dict[str, float]
    plans: dict[str, str]
    """Each claim's plan under EXPLAIN (ANALYZE, BUFFERS): whether it reads idx_jobs_claim, and its buffers."""
    ratios: dict[str, list[float]]
    """Each pair's ratio: `spread`, `runs` (÷ plain), `condition` (plain with ÷ without the condition)."""

    def ratio(self, name: str) -> float:
        return statistics.median(self.ratios[name])


def arguments(queue: str) -> str:
    return f"'{{{queue}}}', 100, now(), '30 s', NULL, '{{{queue}}}'"


def execute(name: str, queue: str) -> str:
    return f"EXECUTE {name}({arguments(queue)})"


async def backlog(connection: asyncpg.Connection, jobs: int) -> None:
    """The three queues of `jobs` pending jobs each; sequences of 100 jobs (`jobs` ≥ 10,000: 100 heads a queue)."""
    await connection.execute("TRUNCATE queueflow.jobs, queueflow.claim_turns")
    for queue, key in (
        ("plain", "NULL"),
        ("spread", f"'s' || (i % {jobs // 100})"),
        ("runs", "'r' || (i % 10) || '-' || (i / 1000)"),
    ):
        await connection.execute(
            f"""
            INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, config, scheduled_at, created_at,
                                        sequence_key, sequence_halt)
            SELECT 'job_{queue}_' || lpad(i::text, 8, '0'), 'tenant-' || (i % 10), '{queue}', 't',
                   '{{"backoff": {{"strategy": "fixed", "base_seconds": 1, "max_seconds": 1, "jitter": false}}}}',
                   now() - interval '1 hour', now() - interval '1 hour', {key},
                   CASE WHEN {key} IS NOT NULL THEN false END
              FROM generate_series(0, {jobs - 1}) AS i
            """
        )
    await connection.execute("VACUUM ANALYZE queueflow.jobs")


async def measure(url: str, *, jobs: int = JOBS, pairs: int = PAIRS, warm_up: int = WARM_UP) -> Measured:
    assert CLAIM.count(CONDITION) == 2, "the claim's condition changed: follow it here"
    connection = await asyncpg.connect(url)
    try:
        await backlog(connection, jobs)
        await connection.execute("SET plan_cache_mode = force_generic_plan")
        types = ", ".join(sql_types(ClaimArgs, TurnOf))
        await connection.execute(f"PREPARE with_sequences({types}) AS {CLAIM}")
        await connection.execute(f"PREPARE without_sequences({types}) AS {WITHOUT}")
        runs = {
            PLAIN: ("with_sequences", "plain"),
            WITHOUT_IT: ("without_sequences", "plain"),
            SPREAD: ("with_sequences", "spread"),
            RUNS: ("with_sequences", "runs"),
        }
        times: dict[str, list[float]] = {name: [] for name in runs}
        for pair in range(pairs):
            if pair and pair % VACUUM_EVERY == 0:
                await connection.execute("VACUUM queueflow.jobs")
            for name in sorted(times, reverse=pair % 2 == 1):
                times[name].append(await timed(connection, execute(*runs[name])))
        plans = {name: await plan(connection, execute(*runs[name])) for name in runs}
    finally:
        await connection.execute("TRUNCATE queueflow.jobs, queueflow.claim_turns")
        await connection.close()

    def ratios(a: str, b: str) -> list[float]:
        return [x / y for x, y in zip(times[a][warm_up:], times[b][warm_up:], strict=True)]

    return Measured(
        jobs,
        pairs - warm_up,
        {name: statistics.median(measured[warm_up:]) * 1000 for name, measured in times.items()},
        plans,
        {"condition": ratios(PLAIN, WITHOUT_IT), "spread": ratios(SPREAD, PLAIN), "runs": ratios(RUNS, PLAIN)},
    )


async def main(url: str) -> None:
    measured = await measure(url)
    for name, median in measured.medians_ms.items():
        print(f"{name}: median {median:.3f} ms; {measured.plans[name]}")
    print(f"paired median ratio, plain with ÷ without the condition: {measured.ratio('condition'):.3f}")
    print(f"paired median ratio, spread ÷ plain: {measured.ratio('spread'):.3f}")
    print(f"paired median ratio, runs ÷ plain: {measured.ratio('runs'):.3f}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
