"""Flow control on every store (README.md, "Flow control"): queue settings, pause, both concurrency limits and the
rate limit."""

from __future__ import annotations

from datetime import timedelta

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import NotFound, ValidationError
from queueflow.core.flow import QueueSettings, QueueSettingsPatch, RateLimit
from queueflow.core.types import JobStatus, NewJob
from queueflow.core.workflow import NewStep, NewWorkflow
from queueflow.engine import Engine

from tests.moments import T


async def enqueue(engine: Engine, n: int, *, tenant: str = T, queue: str = "default") -> list[str]:
    results = await engine.enqueue_many(tenant, [NewJob(task_name=f"t{i}", queue_name=queue) for i in range(n)])
    return [result.job.id for result in results]


async def test_an_unconfigured_queue_has_default_settings_and_a_configured_empty_one_is_listed(
    engine: Engine,
) -> None:
    await enqueue(engine, 1)
    (queue,) = await engine.queue_stats(T)
    assert queue.settings == QueueSettings()
    with pytest.raises(NotFound):
        await engine.get_queue(T, "emails")
    configured = await engine.configure_queue(T, "emails", QueueSettingsPatch(concurrency_limit=5))
    assert configured.name == "emails"
    assert configured.pending == 0
    assert configured.settings == QueueSettings(concurrency_limit=5)
    assert [queue.name for queue in await engine.queue_stats(T)] == ["default", "emails"]
    assert (await engine.get_queue(T, "emails")).settings.concurrency_limit == 5
    # Settings belong to the tenant: another tenant sees neither the queue nor its settings.
    assert await engine.queue_stats("tenant-b") == []
    with pytest.raises(NotFound):
        await engine.get_queue("tenant-b", "emails")


async def test_a_patch_changes_only_the_fields_it_names_and_null_removes_a_limit(engine: Engine) -> None:
    rate = RateLimit(jobs=50, per_seconds=1.5)
    await engine.configure_queue(T, "q", QueueSettingsPatch(paused=True, concurrency_limit=3, rate_limit=rate))
    after = await engine.configure_queue(T, "q", QueueSettingsPatch(key_concurrency_limit=1))
    assert after.settings == QueueSettings(paused=True, concurrency_limit=3, key_concurrency_limit=1, rate_limit=rate)
    after = await engine.configure_queue(T, "q", QueueSettingsPatch(concurrency_limit=None, paused=False))
    assert after.settings == QueueSettings(key_concurrency_limit=1, rate_limit=rate)
    after = await engine.configure_queue(T, "q", QueueSettingsPatch(retention_seconds=3600))
    assert after.settings == QueueSettings(key_concurrency_limit=1, rate_limit=rate, retention_seconds=3600)
    after = await engine.configure_queue(T, "q", QueueSettingsPatch(rate_limit=None, key_concurrency_limit=None))
    assert after.settings == QueueSettings(retention_seconds=3600)
    after = await engine.configure_queue(T, "q", QueueSettingsPatch(retention_seconds=None))
    assert after.settings == QueueSettings()
    assert [queue.name for queue in await engine.queue_stats(T)] == ["q"]  # configured once, still listed


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        (QueueSettingsPatch(concurrency_limit=0), "concurrency_limit"),
        (QueueSettingsPatch(concurrency_limit=100_001), "concurrency_limit"),
        (QueueSettingsPatch(key_concurrency_limit=-1), "key_concurrency_limit"),
        (QueueSettingsPatch(rate_limit=RateLimit(0, 1)), "rate_limit.jobs"),
        (QueueSettingsPatch(rate_limit=RateLimit(1, 0.0001)), "rate_limit.per_seconds"),
        (QueueSettingsPatch(rate_limit=RateLimit(1, float("nan"))), "rate_limit.per_seconds"),
        (QueueSettingsPatch(retention_seconds=59), "retention_seconds"),
        (QueueSettingsPatch(retention_seconds=315_360_001), "retention_seconds"),
    ],
)
async def test_out_of_bounds_settings_are_refused_and_change_nothing(
    engine: Engine, patch: QueueSettingsPatch, field: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        await engine.configure_queue(T, "q", patch)
    assert [error.field for error in raised.value.errors] == [field]
    assert await engine.queue_stats(T) == []


async def test_a_paused_queue_leases_none_of_the_tenants_jobs_but_everything_else_goes_on(
    engine: Engine, clock: TestClock
) -> None:
    (running,) = await enqueue(engine, 1)
    (leased,) = await engine.lease(["default"])
    assert leased.id == running
    mine = await enqueue(engine, 3)
    theirs = await enqueue(engine, 1, tenant="tenant-b")
    await engine.configure_queue(T, "default", QueueSettingsPatch(paused=True))
    # Only the other tenant's job is leased; ours wait.
    assert [job.id for job in await engine.lease(["default"], max_jobs=10)] == theirs
    assert await engine.lease(["default"], max_jobs=10) == []
    # Enqueue, cancel, retry and the running job go on.
    (late,) = await enqueue(engine, 1)
    assert (await engine.cancel_job(T, mine[0])).status is JobStatus.CANCELLED
    assert (await engine.retry_job(T, mine[0])).status is JobStatus.PENDING
    assert (await engine.complete(running, leased.lease_token or "")).status is JobStatus.COMPLETED
    clock.advance(seconds=60)
    assert await engine.lease(["default"], max_jobs=10) == []
    stats = await engine.get_queue(T, "default")
    assert (stats.pending, stats.settings.paused) == (4, True)
    await engine.configure_queue(T, "default", QueueSettingsPatch(paused=False))
    leased_now = await engine.lease(["default"], max_jobs=10)
    assert sorted(job.id for job in leased_now) == sorted([*mine, late])


async def test_pausing_one_queue_leaves_the_others_of_a_multi_queue_lease(engine: Engine) -> None:
    await enqueue(engine, 2, queue="a")
    b = await enqueue(engine, 2, queue="b")
    await engine.configure_queue(T, "a", QueueSettingsPatch(paused=True))
    assert sorted(job.id for job in await engine.lease(["a", "b"], max_jobs=10)) == sorted(b)


async def test_the_concurrency_limit_caps_running_jobs_and_every_way_out_frees_a_slot(
    engine: Engine, clock: TestClock
) -> None:
    await enqueue(engine, 10)
    others = await enqueue(engine, 2, tenant="tenant-b")  # another tenant's jobs are not limited by ours
    await engine.configure_queue(T, "default", QueueSettingsPatch(concurrency_limit=3))
    first = await engine.lease(["default"], max_jobs=10, lease_seconds=30)
    assert len([job for job in first if job.tenant_id == T]) == 3
    assert sorted(job.id for job in first if job.tenant_id != T) == sorted(others)
    assert await engine.lease(["default"], max_jobs=10) == []
    for job in first:
        if job.tenant_id != T:
            await engine.complete(job.id, job.lease_token or "")
    mine = [job for job in first if job.tenant_id == T]
    # complete frees one slot
    await engine.complete(mine[0].id, mine[0].lease_token or "")
    (second,) = await engine.lease(["default"], max_jobs=10)
    assert await engine.lease(["default"]) == []
    # fail (to retrying) frees one
    await engine.fail(mine[1].id, mine[1].lease_token or "", "boom", retry_after_seconds=3600)
    (third,) = await engine.lease(["default"], max_jobs=10)
    # cancel frees one at once
    await engine.cancel_job(T, mine[2].id)
    (fourth,) = await engine.lease(["default"], max_jobs=10, lease_seconds=30)
    assert await engine.lease(["default"]) == []
    # the janitor's reclaim of expired leases frees them at once
    clock.advance(seconds=31)
    assert await engine.lease(["default"]) == []  # expired but not yet reclaimed: still running
    report = await engine.run_maintenance()
    assert report.reclaimed == 3
    assert len(await engine.lease(["default"], max_jobs=10)) == 3
    assert {second.tenant_id, third.tenant_id, fourth.tenant_id} == {T}


async def test_raising_or_removing_the_limit_lets_more_run(engine: Engine) -> None:
    await enqueue(engine, 6)
    await engine.configure_queue(T, "default", QueueSettingsPatch(concurrency_limit=1))
    assert len(await engine.lease(["default"], max_jobs=10)) == 1
    await engine.configure_queue(T, "default", QueueSettingsPatch(concurrency_limit=3))
    assert len(await engine.lease(["default"], max_jobs=10)) == 2
    await engine.configure_queue(T, "default", QueueSettingsPatch(concurrency_limit=None))
    assert len(await engine.lease(["default"], max_jobs=10)) == 3


async def test_a_limited_lease_takes_jobs_in_claim_order(engine: Engine, clock: TestClock) -> None:
    for priority in [0, 5, 1, 9]:
        await engine.enqueue(T, NewJob(task_name=str(priority), priority=priority))
        clock.advance(seconds=1)
    await engine.configure_queue(T, "default", QueueSettingsPatch(concurrency_limit=2))
    assert [job.task_name for job in await engine.lease(["default"], max_jobs=10)] == ["9", "5"]


# ---- concurrency keys -------------------------------------------------------------------------------------


async def test_a_job_keeps_its_concurrency_key_through_enqueue_batch_and_workflow_steps(engine: Engine) -> None:
    single = (await engine.enqueue(T, NewJob(task_name="t", concurrency_key="user-1"))).job
    assert (await engine.get_job(T, single.id)).concurrency_key == "user-1"
    batch = await engine.enqueue_many(T, [NewJob(task_name="t", concurrency_key=f"user-{i}") for i in range(3)])
    assert [(await engine.get_job(T, r.job.id)).concurrency_key for r in batch] == ["user-0", "user-1", "user-2"]
    assert (await engine.enqueue(T, NewJob(task_name="t"))).job.concurrency_key is None
    workflow, _ = await engine.create_workflow(
        T, NewWorkflow(name="w", steps=[NewStep(name="a", task_name="a", concurrency_key="user-9")])
    )
    step_job = await engine.get_job(T, workflow.steps[0].job_id or "")
    assert step_job.concurrency_key == "user-9"
    leased = await engine.lease(["default"], max_jobs=10)
    assert {job.concurrency_key for job in leased} == {"user-0", "user-1", "user-2", "user-9", None}


@pytest.mark.parametrize("key", ["", "x" * 201])
async def test_a_bad_concurrency_key_is_refused(engine: Engine, key: str) -> None:
    with pytest.raises(ValidationError) as raised:
        await engine.enqueue(T, NewJob(task_name="t", concurrency_key=key))
    assert [error.field for error in raised.value.errors] == ["concurrency_key"]


async def test_the_key_concurrency_limit_caps_running_jobs_per_key_and_skips_past_a_full_key(
    engine: Engine, clock: TestClock
) -> None:
    # user-1's backlog comes first; with one slot per key, user-2's and unkeyed jobs must not wait behind it.
    for i in range(5):
        await engine.enqueue(T, NewJob(task_name=f"one-{i}", concurrency_key="user-1"))
        clock.advance(seconds=1)
    await engine.enqueue(T, NewJob(task_name="two-0", concurrency_key="user-2"))
    clock.advance(seconds=1)
    await engine.enqueue(T, NewJob(task_name="two-1", concurrency_key="user-2"))
    clock.advance(seconds=1)
    await engine.enqueue(T, NewJob(task_name="free"))
    await engine.configure_queue(T, "default", QueueSettingsPatch(key_concurrency_limit=1))
    first = await engine.lease(["default"], max_jobs=2)
    assert [job.task_name for job in first] == ["one-0", "two-0"]
    assert [job.task_name for job in await engine.lease(["default"], max_jobs=10)] == ["free"]
    assert await engine.lease(["default"], max_jobs=10) == []
    await engine.complete(first[0].id, first[0].lease_token or "")
    assert [job.task_name for job in await engine.lease(["default"], max_jobs=10)] == ["one-1"]
    await engine.cancel_job(T, first[1].id)
    assert [job.task_name for job in await engine.lease(["default"], max_jobs=10)] == ["two-1"]


async def test_both_limits_hold_together(engine: Engine) -> None:
    await engine.enqueue_many(T, [NewJob(task_name="t", concurrency_key=f"k{i % 3}") for i in range(12)])
    await engine.configure_queue(T, "default", QueueSettingsPatch(concurrency_limit=4, key_concurrency_limit=2))
    leased = await engine.lease(["default"], max_jobs=100)
    assert len(leased) == 4
    assert max(sum(job.concurrency_key == key for job in leased) for key in ("k0", "k1", "k2")) <= 2
    await engine.configure_queue(T, "default", QueueSettingsPatch(concurrency_limit=None))
    more = await engine.lease(["default"], max_jobs=100)
    assert len(leased) + len(more) == 6  # two per key


# ---- rate limit -------------------------------------------------------------------------------------------


async def test_the_rate_limit_is_a_token_bucket_with_a_burst_of_jobs(engine: Engine, clock: TestClock) -> None:
    await enqueue(engine, 100)
    others = await enqueue(engine, 3, tenant="tenant-b")  # not limited by our rate
    await engine.configure_queue(T, "default", QueueSettingsPatch(rate_limit=RateLimit(jobs=5, per_seconds=1)))
    first = await engine.lease(["default"], max_jobs=100)
    assert sum(job.tenant_id == T for job in first) == 5  # the burst
    assert sorted(job.id for job in first if job.tenant_id != T) == sorted(others)
    assert await engine.lease(["default"], max_jobs=100) == []
    clock.advance(seconds=0.1)
    assert await engine.lease(["default"], max_jobs=100) == []  # half a token
    clock.advance(seconds=0.1)
    assert len(await engine.lease(["default"], max_jobs=100)) == 1
    clock.advance(seconds=0.5)
    assert len(await engine.lease(["default"], max_jobs=100)) == 2  # 2.5 tokens; the half stays
    clock.advance(seconds=0.1)
    assert len(await engine.lease(["default"], max_jobs=100)) == 1
    clock.advance(seconds=60)
    assert len(await engine.lease(["default"], max_jobs=100)) == 5  # never more than the burst


async def test_over_ten_seconds_the_rate_holds_and_a_changed_rate_starts_full(engine: Engine, clock: TestClock) -> None:
    await enqueue(engine, 1000)
    await engine.configure_queue(T, "default", QueueSettingsPatch(rate_limit=RateLimit(jobs=50, per_seconds=1)))
    leased = [len(await engine.lease(["default"], max_jobs=7))]
    for _ in range(100):  # ten seconds in steps of 0.1 s, leasing greedily
        clock.advance(seconds=0.1)
        while batch := await engine.lease(["default"], max_jobs=7):
            leased.append(len(batch))
    assert sum(leased) == 50 + 10 * 50
    await engine.configure_queue(T, "default", QueueSettingsPatch(rate_limit=RateLimit(jobs=3, per_seconds=60)))
    assert len(await engine.lease(["default"], max_jobs=100)) == 3
    await engine.configure_queue(T, "default", QueueSettingsPatch(rate_limit=None))
    assert len(await engine.lease(["default"], max_jobs=100)) == 100


async def test_a_lease_throttled_by_the_rate_learns_when_the_next_token_comes(engine: Engine, clock: TestClock) -> None:
    await enqueue(engine, 5)
    assert await engine.next_due(["default"]) is None
    await engine.configure_queue(T, "default", QueueSettingsPatch(rate_limit=RateLimit(jobs=2, per_seconds=10)))
    assert len(await engine.lease(["default"], max_jobs=10)) == 2
    assert await engine.next_due(["default"]) == clock.now() + timedelta(seconds=5)
    clock.advance(seconds=4)
    assert await engine.lease(["default"]) == []
    assert await engine.next_due(["default"]) == clock.now() + timedelta(seconds=1)
    clock.advance(seconds=1)
    assert await engine.next_due(["default"]) is None  # a token is there: nothing to wait for
    assert len(await engine.lease(["default"], max_jobs=10)) == 1
    assert await engine.next_due(["other"]) is None  # only the queues asked about


# A restricted queue is claimed by a path of its own (`claim.restricted.claim_restricted`): a third tenant keeps the
# queue paused so that it is restricted whatever the setting under test does to the tenants leasing from it.
RESTRICTIONS = {
    "limited": [QueueSettingsPatch(concurrency_limit=10)],
    "key-limited": [QueueSettingsPatch(key_concurrency_limit=10)],
    "paused-then-resumed": [QueueSettingsPatch(paused=True), QueueSettingsPatch(paused=False)],
    "rate-limited": [QueueSettingsPatch(rate_limit=RateLimit(jobs=100, per_seconds=1))],
}


async def restrict(engine: Engine, patches: list[QueueSettingsPatch], tenants: list[str]) -> None:
    await engine.configure_queue("tenant-c", "default", QueueSettingsPatch(paused=True))
    for tenant in tenants:
        for patch in patches:
            await engine.configure_queue(tenant, "default", patch)


@pytest.mark.parametrize("restriction", list(RESTRICTIONS))
async def test_a_tenant_scoped_lease_of_a_restricted_queue_takes_only_that_tenants_jobs(
    engine: Engine, restriction: str
) -> None:
    await restrict(engine, RESTRICTIONS[restriction], [T, "tenant-b"])
    theirs = await engine.enqueue_many("tenant-b", [NewJob(task_name="t", priority=10, concurrency_key="k")] * 2)
    mine = await engine.enqueue_many(T, [NewJob(task_name="t", concurrency_key="k")] * 2)
    leased = await engine.lease(["default"], max_jobs=10, scope=T)
    assert sorted(job.id for job in leased) == sorted(result.job.id for result in mine)
    assert all(job.tenant_id == T for job in leased)
    assert sorted(job.id for job in await engine.lease(["default"], max_jobs=10)) == sorted(
        result.job.id for result in theirs
    )


@pytest.mark.parametrize("restriction", list(RESTRICTIONS))
async def test_a_lease_of_task_names_on_a_restricted_queue_takes_only_those_tasks(
    engine: Engine, restriction: str
) -> None:
    await restrict(engine, RESTRICTIONS[restriction], [T])
    await engine.enqueue_many(T, [NewJob(task_name="other", priority=10, concurrency_key="k")] * 2)
    sends = await engine.enqueue_many(T, [NewJob(task_name="send", concurrency_key="k")] * 2)
    leased = await engine.lease(["default"], max_jobs=10, task_names=["send"])
    assert sorted(job.id for job in leased) == sorted(result.job.id for result in sends)
    assert {job.task_name for job in leased} == {"send"}


async def test_a_tenant_scoped_lease_holds_back_what_flow_control_holds_back(engine: Engine) -> None:
    await engine.configure_queue(T, "default", QueueSettingsPatch(paused=True))
    await enqueue(engine, 2)
    assert await engine.lease(["default"], max_jobs=10, scope=T) == []
    await engine.configure_queue(T, "default", QueueSettingsPatch(paused=False, concurrency_limit=1))
    assert len(await engine.lease(["default"], max_jobs=10, scope=T)) == 1
    assert await engine.lease(["default"], max_jobs=10, scope=T) == []


async def test_backlogs_report_what_the_claim_sees_of_each_restricted_queue(engine: Engine, clock: TestClock) -> None:
    await engine.configure_queue(T, "keyed", QueueSettingsPatch(key_concurrency_limit=1))
    await engine.configure_queue(T, "rated", QueueSettingsPatch(rate_limit=RateLimit(2, 10)))
    await engine.configure_queue(T, "open", QueueSettingsPatch(concurrency_limit=None))  # restricts nothing
    for key in ("u1", "u1", "u2", None):
        await engine.enqueue(T, NewJob(task_name="t", queue_name="keyed", concurrency_key=key))
    await engine.enqueue(T, NewJob(task_name="t", queue_name="keyed", delay_seconds=60))  # not due
    await enqueue(engine, 3, queue="rated")
    assert len(await engine.lease(["keyed"], max_jobs=10)) == 3  # one of u1, u2, and the job without a key
    assert len(await engine.lease(["rated"], max_jobs=10)) == 2  # the bucket's two tokens
    clock.advance(seconds=1)
    keyed, rated = await engine.store.queue_backlogs(now=clock.now())
    assert (keyed.queue_name, keyed.running, keyed.tokens) == ("keyed", 3, None)
    assert (keyed.due_by_key, keyed.running_by_key) == ({"u1": 1}, {"u1": 1, "u2": 1})
    assert (rated.queue_name, rated.running, rated.due_by_key, rated.running_by_key) == ("rated", 2, {None: 1}, {})
    assert rated.tokens == pytest.approx(0.2)  # 1 s of refill at 2 per 10 s
    assert await engine.held_back() == {("keyed", "key_concurrency"): 1, ("rated", "rate"): 1}
