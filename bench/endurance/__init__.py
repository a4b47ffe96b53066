"""`make endurance` (issue 42): QueueFlow, PgQueuer and Procrastinate under the pressures production databases see —
a held xmin horizon, long REPEATABLE READ readers, overload, connections cut, a worker killed — at a fixed offered
rate, with pickup latency, throughput, queue depth, dead tuples and size recorded over time.

It runs on a PostgreSQL cluster of its own with PostgreSQL's defaults (`cluster`): production runs autovacuum, and
without it (the machine's shared server has it off) nothing vacuums or analyses the tables, so a recovery after a
held horizon never recovers and a plan made on an empty table is kept; and a cluster of the run's own may be
restarted for real.

Layout: `wire` is what every driver program shares (pacing, the job's payload, the reports a worker prints; stdlib
only, since the peers' drivers import it from bench/.peers-venv); `queueflow_driver` is QueueFlow's producer and
worker (bench/peers/*_endurance.py are the peers'); the rest is the harness: `cluster`, `profiles`, `systems`,
`processes`, `recorder`, `probe`, `faults`, `phases`, `run`, `parts` (what a run stores, a system and rate at a
time, and their combination: the full profile outlasts a working session, so it is measured in parts), `report`,
`plots`.

Nothing here may import beyond the standard library at package level: the peers' Python imports `bench.endurance.wire`.
"""
