"""Triggers and events (README, "Events and triggers"): `queueflow.triggers`, a tenant's rows, with the index an
event looks its matches up in, and `queueflow.events`, the events kept for a day with what each started.

idx_triggers_match holds the enabled triggers by (tenant_id, event): an event reads one index range per pattern its
name can match (the name, and `<prefix>.*` per dot in it: `core.triggers.event_patterns`), never the tenant's other
triggers. The events' primary key (tenant_id, id) is what makes an event id idempotent, concurrent repeats included:
the second insert waits for the first to commit and then finds the row. idx_events_tenant_received is the
dashboard's last events of a tenant, newest first; idx_events_received the janitor's sweep of events older than a
day, across tenants.

Expand-only: two new tables, which a server of revision 0013 never reads.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    """
    CREATE TABLE queueflow.triggers (
        id          TEXT COLLATE "C" PRIMARY KEY,
        tenant_id   TEXT NOT NULL,
        name        TEXT NOT NULL,
        event       TEXT NOT NULL,
        filter      JSONB NOT NULL DEFAULT '{}',
        task        JSONB,
        workflow    JSONB,
        enabled     BOOLEAN NOT NULL DEFAULT true,
        created_at  TIMESTAMPTZ NOT NULL,
        updated_at  TIMESTAMPTZ NOT NULL,
        CONSTRAINT uq_triggers_tenant_name UNIQUE (tenant_id, name),
        CONSTRAINT ck_triggers_starts_one CHECK ((task IS NULL) <> (workflow IS NULL))
    )
    """,
    "CREATE INDEX idx_triggers_match ON queueflow.triggers (tenant_id, event) WHERE enabled",
    """
    CREATE TABLE queueflow.events (
        tenant_id   TEXT NOT NULL,
        id          TEXT NOT NULL,
        name        TEXT NOT NULL,
        payload     JSONB NOT NULL,
        started     JSONB NOT NULL DEFAULT '[]',
        received_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (tenant_id, id)
    )
    """,
    "CREATE INDEX idx_events_tenant_received ON queueflow.events (tenant_id, received_at DESC, id DESC)",
    "CREATE INDEX idx_events_received ON queueflow.events (received_at)",
]

DOWNGRADE = ["DROP TABLE queueflow.events", "DROP TABLE queueflow.triggers"]


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
