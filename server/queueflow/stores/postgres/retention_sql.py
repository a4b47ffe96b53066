"""Retention's SQL (`PostgresJobs.job_delete_finished`): one bounded batch of expired jobs, deleted.

Each queue's expired rows are one range of idx_jobs_finished, (tenant_id, queue_name, completed_at) over finished
rows: `tenant_id = … AND queue_name = … AND completed_at < that queue's cutoff`, read oldest first. So a batch
reads the expired rows of the queues it visits and nothing else — not another queue's history, however long that
queue keeps it, and no young row (besides what any delete leaves: until vacuum, the entries of rows deleted
before, and a running workflow's step jobs, which stay). Which queues it visits:
- with a server default (`--retention-hours`), every (tenant, queue) that has finished jobs, found by a skip scan
  of the same index (one descent per queue: the next (tenant_id, queue_name) after the last), with the queue's own
  retention, if it has one, instead of the default;
- without one, only the queues that have a retention of their own (queue_settings, a row per configured queue).

The rows are taken `FOR UPDATE SKIP LOCKED`, and the statement is its own transaction: no row a claim, an ack or a
cancel has locked is waited for, and what it locks (finished rows only) no claim or ack reads — an ack matches a
lease token a finished row no longer has, so it passes over the row without locking it. (One wait remains, as any
delete has it: an enqueue that reuses the idempotency key of a job in the batch waits for the batch's commit, tens of
milliseconds, since the unique index can call the key taken or free only then.)

`id = ANY(ARRAY(...))`, not `id IN (...)`: the array is an InitPlan, run once. As a semi-join the planner may run
the LIMITed subquery more than once (a nested loop rescans it), and one DELETE then removed more rows than its
LIMIT. A running workflow's finished step jobs stay: its self-heal reads their outcomes.
"""

from __future__ import annotations

FINISHED = "status IN ('completed', 'dead_letter', 'cancelled')"

# Up to $2 rows of the queue at `q` (columns tenant_id, queue_name) whose completed_at is before `cutoff`.
_EXPIRED_IN_QUEUE = f"""
       CROSS JOIN LATERAL (
             SELECT j.id FROM queueflow.jobs AS j
              WHERE j.tenant_id = q.tenant_id AND j.queue_name = q.queue_name AND j.{FINISHED}
                AND j.completed_at < {{cutoff}}
                AND NOT EXISTS (SELECT FROM queueflow.workflows AS w
                                 WHERE w.id = j.workflow_id AND w.status = 'running')
              ORDER BY j.completed_at
              LIMIT $2
              FOR UPDATE OF j SKIP LOCKED) AS doomed"""

# The cutoff of a queue: now ($1) less its own retention, else the server's default ($3, in seconds).
_BY_DEFAULT = "$1::timestamptz - make_interval(secs => coalesce(s.retention_seconds, $3::float8))"
_BY_OWN = "$1::timestamptz - make_interval(secs => q.retention_seconds)"

# $1 now, $2 the batch's size, $3 the server's default retention in seconds.
DELETE_EXPIRED = f"""
DELETE FROM queueflow.jobs
 WHERE id = ANY(ARRAY(
       WITH RECURSIVE finished_queues AS (
            (SELECT tenant_id, queue_name FROM queueflow.jobs
              WHERE {FINISHED}
              ORDER BY tenant_id, queue_name LIMIT 1)
            UNION ALL
            SELECT next.tenant_id, next.queue_name
              FROM finished_queues AS previous
             CROSS JOIN LATERAL (
                   SELECT tenant_id, queue_name FROM queueflow.jobs
                    WHERE {FINISHED} AND (tenant_id, queue_name) > (previous.tenant_id, previous.queue_name)
                    ORDER BY tenant_id, queue_name LIMIT 1) AS next)
       SELECT doomed.id
         FROM finished_queues AS q
         LEFT JOIN queueflow.queue_settings AS s ON s.tenant_id = q.tenant_id AND s.queue_name = q.queue_name
       {_EXPIRED_IN_QUEUE.format(cutoff=_BY_DEFAULT)}
        LIMIT $2))
"""

# $1 now, $2 the batch's size.
DELETE_EXPIRED_OWN = f"""
DELETE FROM queueflow.jobs
 WHERE id = ANY(ARRAY(
       SELECT doomed.id
         FROM queueflow.queue_settings AS q
       {_EXPIRED_IN_QUEUE.format(cutoff=_BY_OWN)}
        WHERE q.retention_seconds IS NOT NULL
        LIMIT $2))
"""
