"""What the claim's deadline condition (issue 43, deadlines) costs a backlog of jobs without a deadline:
`python -m bench.pgbench.deadline_claim_cost postgresql://…/scratch` on a database `queueflow migrate` built.

The code's CLAIM against the same text without `(j.expires_at IS NULL OR j.expires_at > now)`, both prepared with
generic plans (as the claim function runs), on 100,000 pending jobs in 10 tenants: a claim of 100, rolled back each
time so that the backlog stays, in alternating pairs. Prints each one's median, the paired median ratio, and each
plan's index and buffers. The scratch database's jobs are deleted first.
"""

from __future__ import annotations

import asyncio
import statistics
import sys

import asyncpg
from queueflow.stores.postgres.claim.args import ClaimArgs, TurnOf
from queueflow.stores.postgres.claim.unrestricted_sql import CLAIM
from queueflow.stores.postgres.params import sql_types

from bench.pgbench.claim_probe import plan, timed

CONDITION = " AND (j.expires_at IS NULL OR j.expires_at > $3::timestamptz)"
WITHOUT = CLAIM.replace(CONDITION, "")
PAIRS = 240
WARM_UP = 40
ARGUMENTS = "'{default}', 100, now(), '30 s', NULL, '{default}'"


def execute(name: str) -> str:
    return f"EXECUTE {name}({ARGUMENTS})"


async def main(url: str) -> None:
    assert CLAIM.count(CONDITION) == 2, "the claim's condition changed: follow it here"
    connection = await asyncpg.connect(url)
    await connection.execute("DELETE FROM queueflow.jobs; DELETE FROM queueflow.claim_turns")
    await connection.execute(
        """
        INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, config, scheduled_at, created_at)
        SELECT 'job_b_' || lpad(i::text, 8, '0'), 'tenant-' || (i % 10), 'default', 't',
               '{"backoff": {"strategy": "fixed", "base_seconds": 1, "max_seconds": 1, "jitter": false}}',
               now() - interval '1 hour', now() - interval '1 hour'
          FROM generate_series(1, 100000) AS i
        """
    )
    await connection.execute("VACUUM ANALYZE queueflow.jobs")
    await connection.execute("SET plan_cache_mode = force_generic_plan")
    types = ", ".join(sql_types(ClaimArgs, TurnOf))
    await connection.execute(f"PREPARE with_deadline({types}) AS {CLAIM}")
    await connection.execute(f"PREPARE without_deadline({types}) AS {WITHOUT}")
    times: dict[str, list[float]] = {"with_deadline": [], "without_deadline": []}
    for pair in range(PAIRS):
        for name in sorted(times, reverse=pair % 2 == 1):
            times[name].append(await timed(connection, execute(name)))
    for name, measured in times.items():
        median = statistics.median(measured[WARM_UP:]) * 1000
        print(f"{name}: median {median:.3f} ms; {await plan(connection, execute(name))}")
    ratios = [a / b for a, b in zip(times["with_deadline"][WARM_UP:], times["without_deadline"][WARM_UP:], strict=True)]
    print(f"paired median ratio with ÷ without: {statistics.median(ratios):.3f}")
    await connection.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
