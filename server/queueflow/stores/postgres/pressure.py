"""The PostgreSQL store's `PressureStore`: what its database is under, read from the statistics and activity views.

Both statements read shared memory and the catalog, never a table's pages: `pg_stat_user_tables` counts tuples as
autovacuum sees them, `pg_total_relation_size` asks the file system for sizes, `pg_stat_activity` lists the
backends. `pgstattuple` would give exact counts by reading every page: not for a 15 s scrape.
"""

from __future__ import annotations

from queueflow.core.pressure import HorizonHolder, Pressure, TableUse
from queueflow.stores.postgres.connection import Pooled

TABLE_USE = """
SELECT relname, n_live_tup, n_dead_tup, pg_total_relation_size(relid) AS size_bytes
  FROM pg_stat_user_tables
 WHERE schemaname = 'queueflow'
 ORDER BY relname
"""

# A backend holds the horizon at its snapshot's xmin, or at its own transaction id when that is older (one that
# wrote and sits idle in its transaction). Autovacuum workers are left out: their xmin holds back no vacuum (their
# PROC_IN_VACUUM flag), and a long one is no transaction anyone should end. So are parallel workers: their leader,
# with the same xmin and the application's name, is the one to name. The activity view is read once (a CTE named
# twice is materialised), so both answers come from one look at the backends.
HORIZON = """
WITH others AS (
    SELECT pid, application_name, state, xact_start, query_start,
           greatest(age(backend_xid), age(backend_xmin)) AS xmin_age
      FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type <> 'autovacuum worker'
       AND (leader_pid IS NULL OR leader_pid = pid)
)
SELECT (SELECT min(xact_start) FROM others) AS oldest_xact_start, h.*
  FROM (VALUES (1)) AS one
  LEFT JOIN LATERAL (
      SELECT pid, application_name, state, xact_start, query_start, xmin_age
        FROM others
       WHERE xmin_age IS NOT NULL
       ORDER BY xmin_age DESC, xact_start
       LIMIT 1
  ) AS h ON true
"""


class PostgresPressure(Pooled):
    async def store_pressure(self) -> Pressure:
        async with self._connection() as db:
            tables = await db.fetch(TABLE_USE)
            activity = await db.fetchrow(HORIZON)
        assert activity is not None  # one row, whatever the backends
        holder = None
        if activity["pid"] is not None:
            holder = HorizonHolder(
                pid=activity["pid"],
                application_name=activity["application_name"] or "",
                state=activity["state"],
                xact_start=activity["xact_start"],
                query_start=activity["query_start"],
                age_transactions=activity["xmin_age"],
            )
        return Pressure(
            tables=tuple(
                TableUse(
                    table=row["relname"],
                    live_tuples=row["n_live_tup"],
                    dead_tuples=row["n_dead_tup"],
                    size_bytes=row["size_bytes"],
                )
                for row in tables
            ),
            oldest_xact_start=activity["oldest_xact_start"],
            horizon=holder,
        )
