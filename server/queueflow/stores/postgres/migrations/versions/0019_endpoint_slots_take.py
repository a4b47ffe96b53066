"""Push delivery's slots taken in one round trip (issue 45): `queueflow.endpoint_slots_take`.

Taking slots locks the endpoint's row, then counts its live slots and inserts as many candidates as its
concurrency leaves, in a second statement (its snapshot, taken after the lock was granted, sees every slot the lock's
previous holder committed; one statement's snapshot would not). From the server that was a transaction of four round
trips (BEGIN, the lock, the insert, COMMIT): on an idle endpoint the largest part of enqueue → delivery received
(10 ms of 19 at the median on a loaded 2-core machine). The same two statements in a function — each statement of a
volatile PL/pgSQL function under READ COMMITTED takes a new snapshot — are one call, in the call's own transaction.

Expand-only: a server of revision 0017 or 0018 takes its slots as before, and both take the same lock.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    """
    CREATE FUNCTION queueflow.endpoint_slots_take(
        endpoint text, now timestamptz, candidates text[], until timestamptz
    ) RETURNS SETOF text
    LANGUAGE plpgsql VOLATILE AS $function$
    DECLARE
        allowed integer;
    BEGIN
        SELECT e.concurrency INTO allowed FROM queueflow.endpoints e
         WHERE e.id = endpoint_slots_take.endpoint AND NOT e.paused FOR NO KEY UPDATE;
        IF allowed IS NULL THEN
            RETURN;
        END IF;
        -- A new snapshot: every slot committed before the lock was granted is seen. Expired slots go; of the
        -- candidates (in order), as many are inserted as the concurrency leaves beside the live ones.
        RETURN QUERY
        WITH swept AS (
                 DELETE FROM queueflow.endpoint_slots s
                  WHERE s.endpoint_id = endpoint_slots_take.endpoint AND s.held_until <= endpoint_slots_take.now
             ),
             live AS (
                 SELECT count(*) AS n FROM queueflow.endpoint_slots s
                  WHERE s.endpoint_id = endpoint_slots_take.endpoint AND s.held_until > endpoint_slots_take.now
             )
        INSERT INTO queueflow.endpoint_slots AS s (id, endpoint_id, held_until)
        SELECT candidate.id, endpoint_slots_take.endpoint, endpoint_slots_take.until
          FROM unnest(endpoint_slots_take.candidates) WITH ORDINALITY AS candidate (id, n), live
         WHERE candidate.n <= allowed - live.n
        RETURNING s.id;
    END
    $function$
    """,
]

DOWNGRADE = ["DROP FUNCTION queueflow.endpoint_slots_take(text, timestamptz, text[], timestamptz)"]


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
