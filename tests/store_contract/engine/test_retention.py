"""Retention per queue through the janitor's sweep (`Engine.run_maintenance`), on every store: a queue's own
`retention_seconds`, else the server's default (`EngineSettings.retention`), else keep.

A store may delete an expired job up to `core.retention.LATEST_AFTER` past its age (one that drops history in whole
time ranges), so a job is expected gone only once that much later, and kept while younger than its retention."""

from __future__ import annotations

import random
from datetime import timedelta

from queueflow.clocks import TestClock
from queueflow.core.flow import QueueSettingsPatch
from queueflow.core.retention import LATEST_AFTER
from queueflow.core.types import JobStatus, NewJob
from queueflow.engine import Engine, EngineSettings
from queueflow.ports import JobStore

from tests.moments import T
from tests.store_contract.workflow_helpers import Worker, dag, step

HOUR = timedelta(hours=1)
OTHER = "tenant-b"


def engine_on(store: JobStore, clock: TestClock, **settings: object) -> Engine:
    return Engine(store, clock, rng=random.Random(3), settings=EngineSettings(**settings))  # type: ignore[arg-type]


async def retain(engine: Engine, queue: str, seconds: int | None, tenant: str = T) -> None:
    await engine.configure_queue(tenant, queue, QueueSettingsPatch(retention_seconds=seconds))


async def completed(engine: Engine, queue: str, tenant: str = T) -> str:
    """A job of `tenant` in `queue`, completed now (the queue holds nothing else that is due)."""
    await engine.enqueue(tenant, NewJob(task_name="t", queue_name=queue))
    (leased,) = await engine.lease([queue])
    await engine.complete(leased.id, leased.lease_token or "", {"ok": True})
    return leased.id


async def ids(engine: Engine, tenant: str = T) -> set[str]:
    return {job.id for job in (await engine.list_jobs(tenant, limit=200)).items}


async def test_a_queue_s_retention_deletes_its_old_finished_jobs_and_keeps_the_rest(
    store: JobStore, clock: TestClock
) -> None:
    engine = engine_on(store, clock)  # no server default: only "reports" keeps its jobs for a limited time
    await retain(engine, "reports", 3600)
    done = await completed(engine, "reports")
    await engine.enqueue(T, NewJob(task_name="t", queue_name="reports"))
    (failing,) = await engine.lease(["reports"])
    await engine.fail(failing.id, failing.lease_token or "", "boom", retryable=False)
    cancelled = (await engine.enqueue(T, NewJob(task_name="t", queue_name="reports"))).job
    await engine.cancel_job(T, cancelled.id)
    elsewhere = await completed(engine, "mail")
    theirs = await completed(engine, "reports", tenant=OTHER)
    later = (await engine.enqueue(T, NewJob(task_name="t", queue_name="reports", delay_seconds=86_400))).job
    clock.advance(minutes=71)
    young = await completed(engine, "reports")
    pending = (await engine.enqueue(T, NewJob(task_name="t", queue_name="reports"))).job
    before = await engine.get_job(T, young)

    clock.advance(minutes=50)  # the first jobs are 2 h 1 min old (past the hour and the slack), `young` 50 min
    assert (await engine.run_maintenance()).deleted == 3
    assert await ids(engine) == {young, elsewhere, pending.id, later.id}
    assert await ids(engine, OTHER) == {theirs}
    assert await engine.get_job(T, young) == before  # until it goes, a finished job reads as it did
    assert {done, failing.id, cancelled.id}.isdisjoint(await ids(engine))


async def test_the_server_default_applies_to_queues_without_their_own_and_a_queue_s_own_wins(
    store: JobStore, clock: TestClock
) -> None:
    engine = engine_on(store, clock, retention=HOUR)
    await retain(engine, "archive", 5 * 3600)
    await retain(engine, "quick", 60)
    quick = await completed(engine, "quick")
    archived = await completed(engine, "archive")
    clock.advance(minutes=62)
    plain = await completed(engine, "plain")
    theirs = await completed(engine, "plain", tenant=OTHER)
    assert (await engine.run_maintenance()).deleted == 1  # `quick`: a minute and the slack ago
    assert await ids(engine) == {plain, archived}
    assert quick not in await ids(engine)

    # "plain" goes by the default; "archive" (3 h 2 min old) stays by its own five hours.
    clock.advance((HOUR + LATEST_AFTER).total_seconds())
    assert (await engine.run_maintenance()).deleted == 2
    assert await ids(engine) == {archived}
    assert theirs not in await ids(engine, OTHER)
    # Its own retention removed, "archive" keeps its jobs by the default, and this one is past it.
    await retain(engine, "archive", None)
    assert (await engine.run_maintenance()).deleted == 1
    assert await ids(engine) == set()


async def test_null_keeps_finished_jobs_when_the_server_has_no_default(store: JobStore, clock: TestClock) -> None:
    engine = engine_on(store, clock)
    await retain(engine, "reports", 60)
    await retain(engine, "reports", None)
    kept = {await completed(engine, "reports"), await completed(engine, "never-configured")}
    clock.advance(days=3650)
    assert (await engine.run_maintenance()).deleted == 0
    assert await ids(engine) == kept
    assert (await engine.get_queue(T, "reports")).settings.retention_seconds is None


async def test_a_step_job_of_a_running_workflow_is_kept_past_its_queue_s_retention(
    store: JobStore, clock: TestClock
) -> None:
    engine = engine_on(store, clock)
    await retain(engine, "default", 60)
    workflow, _ = await engine.create_workflow(T, dag(step("a"), step("b", "a")))
    worker = Worker(engine)
    await worker.complete(workflow.id, "a")
    clock.advance(hours=2)
    assert (await engine.run_maintenance()).deleted == 0
    (a_job,) = [job for job in (await engine.list_jobs(T)).items if job.status is JobStatus.COMPLETED]
    await worker.complete(workflow.id, "b")
    clock.advance(hours=2)
    assert (await engine.run_maintenance()).deleted == 2
    assert a_job.id not in await ids(engine)


async def test_one_sweep_deletes_in_batches_up_to_its_share(store: JobStore, clock: TestClock) -> None:
    engine = engine_on(store, clock, retention=HOUR, retention_batch=2, retention_batches=2)
    for queue in ["a", "a", "b", "c", "c"]:
        await completed(engine, queue)
    clock.advance((HOUR + LATEST_AFTER).total_seconds() + 1)
    assert (await engine.run_maintenance()).deleted == 4
    assert (await engine.run_maintenance()).deleted == 1
    assert (await engine.run_maintenance()).deleted == 0
    assert await ids(engine) == set()
