"""The fairness turn is the database's (README.md, "Fairness"; issue 32): one for every server process.

`claim_turns` holds, per set of queues leased together (`queues`, sorted), the tenant the last claim of those
queues served last (`tenant_id`): the next claim, in whichever process, starts its turn after it. The claim reads
it and moves it in its own statement (`claim_sql.CLAIM`), so it costs no round trip. A row changes only when the
turn moves (never while one tenant is due), and its updates are HOT (no index covers `tenant_id`; fillfactor leaves
room on the page), so the table stays a page or two however often it changes.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    """
    CREATE TABLE queueflow.claim_turns (
        queues    text[] PRIMARY KEY,
        tenant_id text NOT NULL
    ) WITH (fillfactor = 50)
    """,
]

DOWNGRADE = ["DROP TABLE queueflow.claim_turns"]


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
