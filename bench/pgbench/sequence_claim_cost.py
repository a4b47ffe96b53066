"""What sequences (issue 43) cost the claim: `python -m bench.pgbench.sequence_claim_cost postgresql://…/scratch` on a
database `queueflow migrate` built. The scratch database's jobs are deleted first.

Three queues of 100,000 pending jobs in 10 tenants: `plain` (no sequence), `spread` (1,000 sequences, job i in
sequence i mod 1,000: each sequence's head among the first jobs in claim order) and `runs` (1,000 sequences of 100
consecutive ids: in claim order a head, then the 99 it holds back — the worst layout, where a claim reads a hundred
rows for each it takes). A claim of 100 (generic plans, as the claim function runs them), rolled back each time so
that the backlog stays, in alternating pairs:

1. `plain` by the code's CLAIM against the same text without the sequence condition: what jobs without a sequence
   pay for the feature.
2. `spread` and `runs` against `plain`, all by the code's CLAIM: a backlog in sequences against one without.

Prints each one's median, the paired median ratios, and each plan's buffers.
"""

from __future__ import annotations

import asyncio
import statistics
import sys

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
JOBS = 100_000


def arguments(queue: str) -> str:
    return f"'{{{queue}}}', 100, now(), '30 s', NULL, '{{{queue}}}'"


def execute(name: str, queue: str) -> str:
    return f"EXECUTE {name}({arguments(queue)})"


async def main(url: str) -> None:
    assert CLAIM.count(CONDITION) == 2, "the claim's condition changed: follow it here"
    connection = await asyncpg.connect(url)
    await connection.execute("DELETE FROM queueflow.jobs; DELETE FROM queueflow.claim_turns")
    for queue, key in (
        ("plain", "NULL"),
        ("spread", "'s' || (i % 1000)"),
        ("runs", "'r' || (i / 100)"),
    ):
        await connection.execute(
            f"""
            INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, config, scheduled_at, created_at,
                                        sequence_key, sequence_halt)
            SELECT 'job_{queue}_' || lpad(i::text, 8, '0'), 'tenant-' || (i % 10), '{queue}', 't',
                   '{{"backoff": {{"strategy": "fixed", "base_seconds": 1, "max_seconds": 1, "jitter": false}}}}',
                   now() - interval '1 hour', now() - interval '1 hour', {key},
                   CASE WHEN {key} IS NOT NULL THEN false END
              FROM generate_series(0, {JOBS - 1}) AS i
            """
        )
    await connection.execute("VACUUM ANALYZE queueflow.jobs")
    await connection.execute("SET plan_cache_mode = force_generic_plan")
    types = ", ".join(sql_types(ClaimArgs, TurnOf))
    await connection.execute(f"PREPARE with_sequences({types}) AS {CLAIM}")
    await connection.execute(f"PREPARE without_sequences({types}) AS {WITHOUT}")
    runs = {
        "plain, with the condition": ("with_sequences", "plain"),
        "plain, without it": ("without_sequences", "plain"),
        "spread (1,000 sequences)": ("with_sequences", "spread"),
        "runs (1,000 sequences of consecutive ids)": ("with_sequences", "runs"),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    for pair in range(PAIRS):
        for name in sorted(times, reverse=pair % 2 == 1):
            times[name].append(await timed(connection, execute(*runs[name])))
    for name, measured in times.items():
        median = statistics.median(measured[WARM_UP:]) * 1000
        print(f"{name}: median {median:.3f} ms; {await plan(connection, execute(*runs[name]))}")

    def ratio(a: str, b: str) -> float:
        pairs = zip(times[a][WARM_UP:], times[b][WARM_UP:], strict=True)
        return statistics.median(x / y for x, y in pairs)

    plain, spread, runs = "plain, with the condition", "spread (1,000 sequences)", "runs (1,000 sequences of"
    runs = next(name for name in times if name.startswith(runs))
    print(f"paired median ratio, plain with ÷ without the condition: {ratio(plain, 'plain, without it'):.3f}")
    print(f"paired median ratio, spread ÷ plain: {ratio(spread, plain):.3f}")
    print(f"paired median ratio, runs ÷ plain: {ratio(runs, plain):.3f}")
    await connection.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
