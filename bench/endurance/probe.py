"""The harness's own view of a system's database, on one connection named `endurance-probe` (the faults never cut it):
cheap figures every window (`pg_stat_user_tables`' dead-tuple estimate, relation sizes, the oldest transaction) and,
at each phase's end, exact dead tuples of every table and index of the system (`pgstattuple_approx` of each table,
`pgstattuple` of each index, which it reads whole: so only then).

The oldest transaction is looked for among the run's database's client backends (the horizon of its tables counts
only those, and replication slots), as seconds open and as the age of its XID or snapshot. A snapshot's xmin is the
oldest XID running anywhere on the server, though, so a long writing transaction in another database of a shared
server holds the horizon back too, and shows here as an age in XIDs with no long transaction of our own: one reason
the run has a cluster of its own (`cluster`; with `--shared-server` it wants a quiet server as well as a quiet
machine).
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from bench.endurance.systems import System

APPLICATION = "endurance-probe"
FAULTS = "endurance-fault"

_RELATIONS = """
SELECT c.oid::regclass::text AS name, c.relkind::text AS relkind, am.amname, coalesce(s.n_dead_tup, 0) AS n_dead_tup,
       coalesce(i.indrelid, c.oid)::regclass::text AS of_table,
       CASE c.relkind WHEN 'r' THEN pg_table_size(c.oid) ELSE pg_relation_size(c.oid) END AS bytes
  FROM pg_class AS c
  JOIN pg_namespace AS n ON n.oid = c.relnamespace
  LEFT JOIN pg_am AS am ON am.oid = c.relam
  LEFT JOIN pg_index AS i ON i.indexrelid = c.oid
  LEFT JOIN pg_stat_user_tables AS s ON s.relid = c.oid
 WHERE c.relkind IN ('r', 'i') AND c.oid IN (
       SELECT c.oid FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE {tables}
       UNION SELECT i.indexrelid FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indrelid
         JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE {tables})
 ORDER BY c.relkind DESC, 1
"""
_OLDEST = """
SELECT coalesce(max(greatest(age(backend_xid), age(backend_xmin))), 0) AS xid_age,
       coalesce(extract(epoch FROM max(now() - xact_start)), 0)::float8 AS seconds
  FROM pg_stat_activity
 WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
   AND (backend_xid IS NOT NULL OR backend_xmin IS NOT NULL)
"""
_HOT = """
SELECT coalesce(sum(s.n_dead_tup), 0)::bigint AS dead,
       coalesce(sum(pg_total_relation_size(s.relid)), 0)::bigint AS bytes
  FROM pg_stat_user_tables AS s WHERE s.relid = ANY($1::regclass[])
"""
_TABLE_TUPLES = "SELECT dead_tuple_count, approx_tuple_count FROM pgstattuple_approx($1::regclass)"
"""A table's dead tuples, counted exactly on every page not marked all-visible (a page with a dead tuple never is),
the pages that are skipped: a 1,000 jobs/s run leaves a jobs table of gigabytes, which pgstattuple would read whole
at every phase's end. Its live tuples are estimated on the skipped pages."""
_INDEX_TUPLES = "SELECT dead_tuple_count, tuple_count FROM pgstattuple($1::regclass)"
"""An index's entries, and those marked dead (killed), read whole."""
_PGSTATTUPLE_AMS = ("btree", "hash", "gist")
"""The index kinds pgstattuple reads (a GIN index gets its size only)."""


@dataclass(frozen=True, slots=True)
class Pressure:
    """One window's database figures."""

    hot_dead: int
    """n_dead_tup of the hot tables (the statistics' estimate)."""
    hot_bytes: int
    """The hot tables with their indexes and TOAST."""
    total_bytes: int
    """Every relation of the system."""
    xid_age: int
    """The oldest transaction's (or snapshot's) age in transactions."""
    xact_seconds: float
    """The oldest open transaction's age."""


@dataclass(frozen=True, slots=True)
class Relation:
    """One table or index of the system at a phase's end (pgstattuple's exact figures where it reads the kind)."""

    name: str
    kind: str
    table: str
    """The table itself, or the index's table."""
    bytes: int
    dead_tuples: int | None
    live_tuples: int | None
    n_dead_tup: int


async def _row(db: asyncpg.Connection, sql: str, *args: object) -> asyncpg.Record:
    """The one row of an aggregate."""
    row = await db.fetchrow(sql, *args)
    assert row is not None
    return row


class Probe:
    def __init__(self, url: str, system: System) -> None:
        self._url, self._system = url, system
        self._db: asyncpg.Connection | None = None

    async def _connection(self) -> asyncpg.Connection:
        if self._db is None or self._db.is_closed():
            self._db = await asyncpg.connect(self._url, server_settings={"application_name": APPLICATION})
        return self._db

    async def open(self) -> Probe:
        db = await self._connection()
        await db.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        return self

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()

    async def pressure(self) -> Pressure:
        db = await self._connection()
        hot = await _row(db, _HOT, list(self._system.hot))
        oldest = await _row(db, _OLDEST)
        total = await db.fetchval(f"SELECT coalesce(sum(bytes), 0)::bigint FROM ({self._relations()}) AS r")
        return Pressure(hot["dead"], hot["bytes"], total, oldest["xid_age"], oldest["seconds"])

    def _relations(self) -> str:
        return _RELATIONS.replace("{tables}", self._system.relations)

    async def storage(self) -> list[Relation]:
        """Every table and index of the system, read whole by pgstattuple."""
        db = await self._connection()
        await db.execute("SELECT pg_stat_clear_snapshot()")
        relations = []
        for row in await db.fetch(self._relations()):
            dead = live = None
            if row["relkind"] == "r":
                exact = await _row(db, _TABLE_TUPLES, row["name"])
                dead, live = exact["dead_tuple_count"], exact["approx_tuple_count"]
            elif row["amname"] in _PGSTATTUPLE_AMS:
                exact = await _row(db, _INDEX_TUPLES, row["name"])
                dead, live = exact["dead_tuple_count"], exact["tuple_count"]
            kind = "table" if row["relkind"] == "r" else "index"
            relations.append(Relation(row["name"], kind, row["of_table"], row["bytes"], dead, live, row["n_dead_tup"]))
        return relations

    async def reset(self) -> None:
        """Empty the system's tables (and their dead rows) for a new run: TRUNCATE gives each a new file."""
        db = await self._connection()
        await db.execute(f"TRUNCATE {', '.join(self._system.reset)} CASCADE")
        await db.execute(f"VACUUM (ANALYZE) {', '.join(self._system.reset)}")

    async def unfinished(self) -> int:
        db = await self._connection()
        return int(await db.fetchval(self._system.unfinished))

    async def cut(self) -> int:
        """pg_terminate_backend of every connection of the database but the probe's: for QueueFlow the server's (its
        workers speak HTTP), for a peer its worker's and producer's; how many were cut."""
        db = await self._connection()
        return int(
            await db.fetchval(
                """SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
                    WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name <> $1
                      AND backend_type = 'client backend'""",
                APPLICATION,
            )
        )
