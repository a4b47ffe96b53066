"""The invariants, checked by comparing the ledger (what tasks ran, what the server acknowledged) with the
database once a run has settled."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

import asyncpg

from tests.chaos.ledger import Ledger
from tests.chaos.load import ADDED, EVENT_TRIGGERS
from tests.chaos.tasks import OVERRUN, draw, ends_the_job

TERMINAL = ("completed", "dead_letter", "cancelled")
SIGTERM_LIMIT = 2.0
"""An API server must exit this soon after SIGTERM, parked long-polls or not."""


@dataclass
class Outcome:
    scenario: str
    enqueued: int = 0
    completed: int = 0
    dead_lettered: int = 0
    cancelled: int = 0
    executions: int = 0
    duplicate_executions: int = 0
    retries_by_stops: int = 0
    """Deliveries that ended with their lease expiring (the janitor counting a failed delivery), beyond those of
    tasks that ran past their timeout on purpose: each a retry burnt by a worker that stopped (or was killed, or
    lost its server) while it held the job."""
    duplicate_completions: int = 0
    overwritten: int = 0
    lost: int = 0
    stuck: int = 0
    workflows: int = 0
    workflows_unfinished: int = 0
    cron_fired: int = 0
    events: int = 0
    cron_duplicates: int = 0
    faults: int = 0
    sequence_jobs: int = 0
    sequence_out_of_order: int = 0
    sequence_overlaps: int = 0
    unique_jobs: int = 0
    unique_twice_live: int = 0
    """Unique keys that some snapshot of the jobs table (`scenario.KeyWatch`) showed with two live jobs."""
    recovery: list[float] = field(default_factory=list)
    throughput: float = 0.0
    stranded: list[float] = field(default_factory=list)
    sigterm_exits: dict[str, float] = field(default_factory=dict)
    workers: str = ""
    phases: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Measurements a scenario reports beside the table (vacuum pressure's throughput by window)."""
    logs: str = ""

    @property
    def duplicates_per_1000(self) -> float:
        return 1000 * self.duplicate_executions / self.enqueued if self.enqueued else 0.0

    @property
    def holds(self) -> bool:
        return not self.problems

    def require(self, ok: bool, problem: str) -> None:
        if not ok:
            self.problems.append(problem)


async def check(name: str, database_url: str, ledger: Ledger, *, started: float, settled: bool) -> Outcome:
    out = Outcome(name)
    connection = await asyncpg.connect(database_url)
    try:
        jobs = await connection.fetch(
            "SELECT id, status, result->>'nonce' AS nonce, locked_until < now() AS expired, metadata, delivery_count"
            " FROM queueflow.jobs"
        )
        workflows = await connection.fetch("SELECT id, status FROM queueflow.workflows")
        step_jobs = await connection.fetch(
            "SELECT workflow_id, workflow_step_id, count(*) AS n FROM queueflow.jobs WHERE workflow_id IS NOT NULL"
            " GROUP BY 1, 2 HAVING count(*) > 1"
        )
        added = dict(
            await connection.fetch(
                "SELECT workflow_id, count(*) FROM queueflow.workflow_steps WHERE added_by = 'g' GROUP BY 1"
            )
        )
        waits = dict(
            await connection.fetch("SELECT workflow_id, status FROM queueflow.workflow_steps WHERE name = 'w'")
        )
        from_events = await connection.fetch(
            "SELECT tenant_id, metadata->>'event' AS event, count(*) AS n FROM queueflow.jobs"
            " WHERE metadata->>'trigger' = $1 GROUP BY 1, 2",
            EVENT_TRIGGERS[0],
        )
        flows_from_events = await connection.fetch(
            "SELECT tenant_id, context->'event'->>'id' AS event, count(*) AS n FROM queueflow.workflows"
            " WHERE context ? 'event' GROUP BY 1, 2"
        )
        # Each child step (issue 44): how many children it made, and how it and its child ended.
        child_steps = await connection.fetch(
            "SELECT s.workflow_id, s.name, s.status, c.status AS child_status,"
            " (SELECT count(*) FROM queueflow.workflows AS k WHERE k.parent_id = s.workflow_id"
            "   AND k.parent_step = s.name) AS children"
            " FROM queueflow.workflow_steps AS s LEFT JOIN queueflow.workflows AS c ON c.id = s.child_workflow_id"
            " WHERE s.child IS NOT NULL"
        )
        # Each parent: its own status, its children's, and its `after` step's (`load.create_parent`).
        parents = await connection.fetch(
            "SELECT p.id, p.status, array_agg(c.status) AS children,"
            " (SELECT a.status FROM queueflow.workflow_steps AS a WHERE a.workflow_id = p.id AND a.name = 'after')"
            " AS after FROM queueflow.workflows AS p JOIN queueflow.workflow_steps AS s ON s.workflow_id = p.id"
            " LEFT JOIN queueflow.workflows AS c ON c.id = s.child_workflow_id WHERE s.child IS NOT NULL"
            " GROUP BY p.id, p.status"
        )
        sequenced = await connection.fetch(
            "SELECT id, tenant_id, sequence_key FROM queueflow.jobs WHERE sequence_key IS NOT NULL"
        )
        out.unique_jobs = await connection.fetchval("SELECT count(*) FROM queueflow.jobs WHERE unique_key IS NOT NULL")
        # How much longer the sequences took to finish than the other jobs (what they add to a run's settling).
        sequences_after = await connection.fetchval(
            "SELECT extract(epoch FROM max(completed_at) FILTER (WHERE sequence_key IS NOT NULL)"
            " - max(completed_at) FILTER (WHERE sequence_key IS NULL AND workflow_id IS NULL))::float8"
            " FROM queueflow.jobs"
        )
        cron = await connection.fetch(
            "SELECT tenant_id, metadata->>'schedule' AS schedule, metadata->>'occurrence' AS occurrence, count(*) AS n"
            " FROM queueflow.jobs WHERE metadata ? 'schedule' GROUP BY 1, 2, 3"
        )
    finally:
        await connection.close()

    by_id = {row["id"]: row for row in jobs}
    out.enqueued = len(jobs)
    out.completed = sum(row["status"] == "completed" for row in jobs)
    out.dead_lettered = sum(row["status"] == "dead_letter" for row in jobs)
    out.cancelled = sum(row["status"] == "cancelled" for row in jobs)

    # Every job the driver was told exists is in the table; every row ended in a terminal state.
    sent = {job_id for (job_id,) in ledger.rows("SELECT job_id FROM enqueued WHERE kind = 'job'")}
    missing = sent - by_id.keys()
    unfinished = [row for row in jobs if row["status"] not in TERMINAL]
    out.stuck = sum(row["status"] == "running" and bool(row["expired"]) for row in unfinished)
    out.lost = len(missing) + len(unfinished) - out.stuck
    out.require(not missing, f"{len(missing)} enqueued jobs are not in the table")
    out.require(not unfinished, f"{len(unfinished)} jobs never finished: {_sample(r['id'] for r in unfinished)}")
    out.require(out.stuck == 0, f"{out.stuck} jobs left running past their lease")

    # No job completed twice; the result of an acknowledged completion is never replaced; a completed job's
    # result is one that some execution of it produced.
    acked: dict[str, list[str]] = {}
    for job_id, nonce in ledger.rows("SELECT job_id, nonce FROM outcomes WHERE kind = 'complete' AND acked = 1"):
        acked.setdefault(str(job_id), []).append(str(nonce))
    twice = [job_id for job_id, nonces in acked.items() if len(nonces) > 1]
    out.duplicate_completions = len(twice)
    out.require(not twice, f"{len(twice)} jobs acknowledged as completed twice: {_sample(twice)}")
    produced: dict[str, set[str]] = {}
    executions: dict[str, int] = {}
    for job_id, nonce in ledger.rows("SELECT job_id, nonce FROM executions"):
        produced.setdefault(str(job_id), set()).add(str(nonce))
        executions[str(job_id)] = executions.get(str(job_id), 0) + 1
    overwritten = [
        job_id
        for job_id, nonces in acked.items()
        if job_id in by_id and (by_id[job_id]["status"] != "completed" or by_id[job_id]["nonce"] != nonces[-1])
    ]
    foreign = [
        row["id"] for row in jobs if row["status"] == "completed" and row["nonce"] not in produced.get(row["id"], set())
    ]
    out.overwritten = len(overwritten) + len(foreign)
    out.require(
        not overwritten, f"{len(overwritten)} acknowledged completions were overwritten: {_sample(overwritten)}"
    )
    out.require(not foreign, f"{len(foreign)} completed jobs hold a result no execution produced: {_sample(foreign)}")

    # Delivery is at least once; a duplicate is an execution that ran after the job's work was done: started after
    # an execution that, run to its end, settles the job (it succeeds, or fails for good). A job run again after a
    # delivery that raised or asked to retry (or that overran its timeout on purpose) is retried, not run twice,
    # whether that failure's outcome was acknowledged or lost.
    failed = dict(ledger.rows("SELECT job_id, count(*) FROM outcomes WHERE kind = 'fail' AND acked = 1 GROUP BY 1"))
    overran = overran_on_purpose(ledger)
    out.executions = sum(executions.values())
    out.duplicate_executions = duplicate_executions(ledger)
    out.retries_by_stops = retries_by_stops(jobs, failed, overran)

    # Workflows that grow and wait (issue 31): every step added once and run by one job, every signal the driver
    # had answered acted on (its wait completed, not timed out), each growing workflow with all its added steps.
    out.require(not step_jobs, f"{len(step_jobs)} workflow steps ran as more than one job: {_sample(step_jobs)}")
    signalled = {
        str(workflow_id) for (workflow_id,) in ledger.rows("SELECT job_id FROM enqueued WHERE kind = 'signal'")
    }
    lost = [workflow_id for workflow_id in signalled if waits.get(workflow_id) != "completed"]
    out.require(not lost, f"{len(lost)} signals answered but not acted on: {_sample(lost)}")
    short = [workflow_id for workflow_id in signalled if added.get(workflow_id) != len(ADDED)]
    out.require(not short, f"{len(short)} growing workflows without all their added steps: {_sample(short)}")

    # Child workflows (issue 44): every child created once, whatever was killed, and every parent's step ended as
    # its child did (completed with it, failed otherwise).
    not_once = [f"{row['workflow_id']}.{row['name']}" for row in child_steps if row["children"] != 1]
    out.require(not not_once, f"{len(not_once)} child steps with other than one child: {_sample(not_once)}")
    unlike = [
        f"{row['workflow_id']}.{row['name']}"
        for row in child_steps
        if row["status"] != ("completed" if row["child_status"] == "completed" else "failed")
    ]
    out.require(not unlike, f"{len(unlike)} child steps that did not end as their child: {_sample(unlike)}")
    # And every parent as its children did: completed when they all did (and its last step), partially failed
    # otherwise (its child steps fail with `continue`, so none halts it).
    astray = [
        row["id"]
        for row in parents
        if row["status"]
        != (
            "completed" if row["after"] == "completed" and set(row["children"]) == {"completed"} else "partially_failed"
        )
    ]
    out.require(not astray, f"{len(astray)} parents that did not end as their children: {_sample(astray)}")

    out.workflows = len(workflows)
    out.workflows_unfinished = sum(row["status"] == "running" for row in workflows)
    out.require(out.workflows_unfinished == 0, f"{out.workflows_unfinished} workflows never finished")
    out.cron_fired = sum(row["n"] for row in cron)
    out.cron_duplicates = sum(row["n"] - 1 for row in cron if row["n"] > 1)
    out.require(out.cron_duplicates == 0, f"{out.cron_duplicates} cron occurrences fired more than once")
    out.require(settled, "the run did not settle in time")

    # Events (issue 44): every event the driver had answered started each of its triggers exactly once, however
    # often a kill made it send the event again.
    sent_events = {str(event) for (event,) in ledger.rows("SELECT job_id FROM enqueued WHERE kind = 'event'")}
    out.events = len(sent_events)
    for kind, rows in (("job", from_events), ("workflow", flows_from_events)):
        starts = {str(row["event"]): int(row["n"]) for row in rows}
        unstarted = sorted(sent_events - starts.keys())
        twice = sorted(event for event, n in starts.items() if n > 1)
        out.require(not unstarted, f"{len(unstarted)} events never started their {kind}: {_sample(unstarted)}")
        out.require(not twice, f"{len(twice)} events started their {kind} more than once: {_sample(twice)}")

    # Sequences (issue 43): by the ledger, no execution of a sequence's job started before an execution of an earlier
    # job of it, and none ran while another job of it ran.
    out.sequence_jobs = len(sequenced)
    if sequences_after is not None:
        out.notes.append(f"the last job of a sequence finished {sequences_after:.1f} s after the last plain job")
    out.sequence_out_of_order, out.sequence_overlaps, runs = sequence_runs_violations(sequenced, ledger, overran)
    out.notes.append(
        f"{len(runs)} executions of sequences' jobs, {sum(run.returned is not None for run in runs)} of them returned"
        f" ({sum(run.lost_lease for run in runs)} overran their lease on purpose)"
    )
    out.require(
        out.sequence_out_of_order == 0, f"{out.sequence_out_of_order} executions of sequences' jobs ran out of order"
    )
    out.require(
        out.sequence_overlaps == 0, f"{out.sequence_overlaps} executions overlapped another job of their sequence"
    )

    # Recovery: from each fault to the first acknowledged outcome after it. Throughput: acknowledged outcomes
    # over the time they took.
    faults = [float(at) for (at,) in ledger.rows("SELECT at FROM faults ORDER BY at")]
    out.faults = len(faults)
    for at in faults:
        (first,) = ledger.rows("SELECT min(at) FROM outcomes WHERE acked = 1 AND at > ?", at)[0]
        if first is not None:
            out.recovery.append(float(first) - at)
    api_exit = out.sigterm_exits.get("api", 0.0)
    out.require(api_exit <= SIGTERM_LIMIT, f"an API server took {api_exit:.1f} s to exit after SIGTERM")
    (last,) = ledger.rows("SELECT max(at) FROM outcomes WHERE acked = 1")[0]
    settled_count = ledger.rows("SELECT count(*) FROM outcomes WHERE acked = 1")[0][0]
    if last is not None and float(last) > started:
        out.throughput = int(str(settled_count)) / (float(last) - started)
    return out


def duplicate_executions(ledger: Ledger) -> int:
    """Per job, the executions that started after its first one that settles it (`tasks.ends_the_job`)."""
    runs: dict[str, list[tuple[float, int]]] = {}
    for job_id, delivery, at in ledger.rows("SELECT job_id, delivery, at FROM executions"):
        runs.setdefault(str(job_id), []).append((float(str(at)), int(str(delivery))))
    duplicates = 0
    for job_id, executions in runs.items():
        executions.sort()
        settling = [n for n, (_, delivery) in enumerate(executions) if ends_the_job(job_id, delivery)]
        if settling:
            duplicates += len(executions) - settling[0] - 1
    return duplicates


@dataclass(frozen=True)
class Run:
    """One execution of a job of a sequence, as the ledger has it."""

    job_id: str
    started: float
    returned: float | None
    """When its task returned or raised; None if its process died first."""
    lost_lease: bool = False
    """A first delivery that overran its timeout on purpose: the job ran again while it still slept."""


def sequence_violations(runs: Sequence[Run]) -> tuple[int, int]:
    """(out of order, overlaps) of one sequence's executions. Out of order: an execution that started before an
    execution of an earlier job (by id) of the sequence did — the server hands a job out only once every earlier one
    has finished. An overlap: an execution that started while an execution of another job of the sequence ran, from
    its start to its return; counted among the executions that held their lease to the end (not one whose process
    died, which never returned, nor one that overran its timeout on purpose, whose job rightly ran again)."""
    out_of_order, latest = 0, float("-inf")
    starts: dict[str, list[float]] = {}
    for run in runs:
        starts.setdefault(run.job_id, []).append(run.started)
    for job_id in sorted(starts):
        out_of_order += sum(started < latest for started in starts[job_id])
        latest = max(latest, *starts[job_id])
    held = [run for run in runs if run.returned is not None and not run.lost_lease]
    overlaps = sum(
        any(other.job_id != run.job_id and other.started <= run.started < (other.returned or 0) for other in held)
        for run in held
    )
    return out_of_order, overlaps


def sequence_runs_violations(
    sequenced: list[asyncpg.Record], ledger: Ledger, overran: set[str]
) -> tuple[int, int, list[Run]]:
    """`sequence_violations` summed over every sequence of the run (its jobs by tenant and key), and the runs."""
    returned = {str(nonce): float(str(at)) for nonce, at in ledger.rows("SELECT nonce, at FROM returns")}
    key_of = {row["id"]: (row["tenant_id"], row["sequence_key"]) for row in sequenced}
    runs: dict[tuple[str, str], list[Run]] = {}
    for job_id, delivery, nonce, at in ledger.rows("SELECT job_id, delivery, nonce, at FROM executions"):
        if str(job_id) in key_of:
            lost = str(job_id) in overran and int(str(delivery)) == 1
            run = Run(str(job_id), float(str(at)), returned.get(str(nonce)), lost)
            runs.setdefault(key_of[str(job_id)], []).append(run)
    totals = [sequence_violations(each) for each in runs.values()]
    every = [run for each in runs.values() for run in each]
    return sum(order for order, _ in totals), sum(overlaps for _, overlaps in totals), every


def overran_on_purpose(ledger: Ledger) -> set[str]:
    """The jobs whose first delivery ran and overran its timeout on purpose (`tasks.chaos`)."""
    return {
        str(job_id)
        for (job_id,) in ledger.rows("SELECT DISTINCT job_id FROM executions WHERE delivery = 1")
        if OVERRUN[0] <= draw(str(job_id), 1) < OVERRUN[1]
    }


def retries_by_stops(jobs: list[asyncpg.Record], failed: dict[object, object], overran: set[str]) -> int:
    """Per finished job, its deliveries that neither completed it nor were failed by its task (an acknowledged
    `fail`) — so ended by the janitor, its lease expired — less the one a task overran on purpose. A released
    delivery is no delivery (`delivery_count` goes back): it counts nothing."""
    burnt = 0
    for row in jobs:
        if row["status"] not in ("completed", "dead_letter"):
            continue
        ended_by_task = int(str(failed.get(row["id"], 0))) + (row["status"] == "completed")
        burnt += max(0, row["delivery_count"] - ended_by_task - (row["id"] in overran))
    return burnt


def _sample(ids: object) -> str:
    items = sorted(str(i) for i in ids)  # type: ignore[attr-defined]
    return ", ".join(items[:5]) + (" …" if len(items) > 5 else "")


def recovery_summary(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.2f} / {max(values):.2f}"
