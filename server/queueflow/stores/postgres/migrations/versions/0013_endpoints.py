"""Push endpoints (issue 45): `endpoints`, one row per (tenant, name), and `endpoint_slots`, the deliveries in flight.

An endpoint keeps its signing secret as text: the server must compute HMACs with it, so it cannot keep a hash (as
Stripe and every webhook sender keep theirs); the API shows it in full only when it is made or rotated. A slot is
one delivery in flight, held until `held_until` (extended with its job's lease): `in_flight` is the count of slots
held now, so a process that dies mid-delivery frees its slots when their hold passes, and the row lock under which
slots are taken bounds every process's deliveries together by `concurrency`.

Expand-only: two new tables, which a server of revision 0012 never reads.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-07
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    """
    CREATE TABLE queueflow.endpoints (
        id                    TEXT PRIMARY KEY,
        tenant_id             TEXT NOT NULL,
        name                  TEXT NOT NULL,
        url                   TEXT NOT NULL,
        queues                TEXT[] NOT NULL,
        task_names            TEXT[],
        concurrency           INTEGER NOT NULL CHECK (concurrency BETWEEN 1 AND 1000),
        timeout_seconds       INTEGER NOT NULL CHECK (timeout_seconds BETWEEN 1 AND 900),
        paused                BOOLEAN NOT NULL DEFAULT false,
        secret                TEXT NOT NULL,
        previous_secret       TEXT,
        previous_secret_until TIMESTAMPTZ,
        delivered             BIGINT NOT NULL DEFAULT 0,
        failed                BIGINT NOT NULL DEFAULT 0,
        last_error            TEXT,
        last_delivery_at      TIMESTAMPTZ,
        created_at            TIMESTAMPTZ NOT NULL,
        updated_at            TIMESTAMPTZ NOT NULL,
        CONSTRAINT uq_endpoints_tenant_name UNIQUE (tenant_id, name)
    )
    """,
    "CREATE INDEX idx_endpoints_tenant_created ON queueflow.endpoints (tenant_id, created_at DESC, id DESC)",
    """
    CREATE TABLE queueflow.endpoint_slots (
        id          TEXT PRIMARY KEY,
        endpoint_id TEXT NOT NULL REFERENCES queueflow.endpoints (id) ON DELETE CASCADE,
        held_until  TIMESTAMPTZ NOT NULL
    )
    """,
    "CREATE INDEX idx_endpoint_slots_endpoint ON queueflow.endpoint_slots (endpoint_id, held_until)",
]

DOWNGRADE = ["DROP TABLE queueflow.endpoint_slots", "DROP TABLE queueflow.endpoints"]


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
