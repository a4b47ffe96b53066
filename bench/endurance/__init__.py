"""`make endurance` (issue 42): QueueFlow, PgQueuer and Procrastinate under the pressures production databases see —
a held xmin horizon, long REPEATABLE READ readers, overload, connections cut, a worker killed — at a fixed offered
rate, with pickup latency, throughput, queue depth, dead tuples and size recorded over time.

Layout: `wire` is what every driver program shares (pacing, the job's payload, the reports a worker prints; stdlib
only, since the peers' drivers import it from bench/.peers-venv); `queueflow_driver` is QueueFlow's producer and
worker (bench/peers/*_endurance.py are the peers'); the rest is the harness: `profiles`, `systems`, `processes`,
`recorder`, `probe`, `faults`, `phases`, `run`, `report`, `plots`.

Nothing here may import beyond the standard library at package level: the peers' Python imports `bench.endurance.wire`.
"""
