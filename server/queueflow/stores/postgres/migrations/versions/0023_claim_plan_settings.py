"""The claim functions plan without sequential scans and run without JIT compilation (issue 42: claims whose cost
grew with the table, and claims that took seconds after a hold).

- `enable_seqscan = off`. A claim function keeps the generic plan it made on its session's first call
  (`plan_cache_mode = force_generic_plan`, its SET clause). A server's connections make it as the server starts, often
  on a new or nearly empty jobs table: PostgreSQL then costs `jobs` as a few pages, where reading it whole is cheaper
  than a probe of its primary key, and the plan's last step (the UPDATE of the picked ids) read the whole table. The
  plan is kept until an ANALYZE of `jobs` (autovacuum's) or DDL invalidates it — on a database where autovacuum never
  ran, for the life of the connection: every claim read every page, 1,440 buffers a claim after a minute at 150
  jobs/s, 6,800-11,300 under a held horizon (bench/results/2026-12-07-claim-plan-kept.md). Without sequential scans
  the plan walks the indexes whatever the statistics say; every table the claim reads has the index it needs.
- `jit = off`. After a held horizon ends, autovacuum empties most of the claim index's pages and ANALYZE costs each
  probe of the sparse index at hundreds: the generic plan's total passed `jit_optimize_above_cost` and
  `jit_inline_above_cost` (654,179 against 500,000), and PostgreSQL compiled the claim with LLVM on every execution —
  1.6-3.7 s of CPU a claim, for a plan that reads 432 buffers; pickup p99 9.6 s for a minute (same note). A claim is
  a short statement run thousands of times a second; compiling it never pays.

Every claim function gets both settings, the ones earlier releases' servers call included (their bodies are
unchanged: settings of the function are not a new claim, and those servers gain the same plans); the downgrade takes
them off.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-07
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def for_every_claim_function(action: str) -> str:
    """`ALTER FUNCTION <claim function> <action>` for every claim_NNNN function of the schema."""
    return f"""
    DO $$
    DECLARE claim regprocedure;
    BEGIN
        FOR claim IN SELECT p.oid::regprocedure FROM pg_proc AS p
                      WHERE p.pronamespace = 'queueflow'::regnamespace AND p.proname ~ '^claim_[0-9]{{4}}$'
        LOOP
            EXECUTE format('ALTER FUNCTION %s {action}', claim);
        END LOOP;
    END $$
    """


UPGRADE = [for_every_claim_function("SET enable_seqscan = off"), for_every_claim_function("SET jit = off")]

DOWNGRADE = [for_every_claim_function("RESET jit"), for_every_claim_function("RESET enable_seqscan")]


def run(statements: list[str]) -> None:
    # As in 0001: one statement per call, through the driver (no bind-parameter parsing of the SQL text).
    for sql in statements:
        if context.is_offline_mode():
            op.execute(sql)
        else:
            op.get_bind().exec_driver_sql(sql)


def upgrade() -> None:
    run(UPGRADE)


def downgrade() -> None:
    run(DOWNGRADE)
