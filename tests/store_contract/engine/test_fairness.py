"""Fair leasing across tenants on every store (README.md, "Fairness"): with k tenants holding due jobs in a queue,
any k consecutive single-job leases serve each of them, whatever their backlogs; a multi-job lease takes its jobs
round-robin across them."""

from __future__ import annotations

import asyncio

from queueflow.clocks import TestClock
from queueflow.core.flow import QueueSettingsPatch
from queueflow.core.types import ClaimRequest, NewJob
from queueflow.engine import Engine
from queueflow.ports import Store


async def enqueue(engine: Engine, tenant: str, n: int, *, queue: str = "default", priority: int = 0) -> list[str]:
    ids = []
    for start in range(0, n, 1000):  # a batch holds at most 1,000 jobs
        jobs = [NewJob(task_name="t", queue_name=queue, priority=priority)] * min(1000, n - start)
        ids += [result.job.id for result in await engine.enqueue_many(tenant, jobs)]
    return ids


async def single_leases(engine: Engine, n: int, queues: tuple[str, ...] = ("default",)) -> list[str]:
    """The tenants n single-job leases served, in order."""
    served = []
    for _ in range(n):
        (job,) = await engine.lease(list(queues))
        served.append(job.tenant_id)
    return served


async def test_a_burst_never_holds_another_tenants_jobs_back(engine: Engine, clock: TestClock) -> None:
    await enqueue(engine, "a", 10_000)
    clock.advance(seconds=1)
    theirs = set(await enqueue(engine, "b", 10))
    clock.advance(seconds=1)
    served: list[str] = []
    for _ in range(20):
        (job,) = await engine.lease(["default"])
        served.append(job.id)
    assert theirs <= set(served)


async def test_with_100_tenants_every_one_is_served_within_the_first_100_leases(
    engine: Engine, clock: TestClock
) -> None:
    tenants = [f"tenant-{i:03}" for i in range(100)]
    for tenant in reversed(tenants):  # the last tenant's jobs are the oldest: claim order alone would serve it only
        await enqueue(engine, tenant, 100)
        clock.advance(seconds=1)
    assert sorted(await single_leases(engine, 100)) == tenants


async def test_single_leases_take_the_tenants_in_turn_and_each_tenants_jobs_in_claim_order(
    engine: Engine, clock: TestClock
) -> None:
    async def one(tenant: str, priority: int = 0) -> str:
        clock.advance(seconds=1)  # one created_at each: claim order is then the order of these calls
        (job_id,) = await enqueue(engine, tenant, 1, priority=priority)
        return job_id

    a = [await one("a") for _ in range(3)]
    urgent_a = await one("a", priority=5)
    b = [await one("b") for _ in range(2)]
    c = await one("c")
    served = [(await engine.lease(["default"]))[0].id for _ in range(7)]
    # Round one: a, b, c; then the tenants that still have jobs, in the same turn.
    assert served == [urgent_a, b[0], c, a[0], b[1], a[1], a[2]]
    assert await engine.lease(["default"]) == []


async def test_the_turn_goes_on_where_the_previous_lease_stopped(engine: Engine, clock: TestClock) -> None:
    for tenant in ("a", "b", "c"):
        await enqueue(engine, tenant, 4)
    clock.advance(seconds=1)
    assert [job.tenant_id for job in await engine.lease(["default"], max_jobs=2)] == ["a", "b"]
    assert await single_leases(engine, 1) == ["c"]
    assert [job.tenant_id for job in await engine.lease(["default"], max_jobs=4)] == ["a", "b", "c", "a"]
    # A tenant that comes in is served at its place in the turn.
    await enqueue(engine, "bb", 1)
    assert await single_leases(engine, 4) == ["b", "bb", "c", "a"]


async def test_a_multi_job_lease_takes_its_jobs_round_robin_and_fills_up_from_the_tenants_with_more(
    engine: Engine, clock: TestClock
) -> None:
    await enqueue(engine, "a", 50)
    await enqueue(engine, "b", 2)
    await enqueue(engine, "c", 1)
    clock.advance(seconds=1)
    leased = await engine.lease(["default"], max_jobs=30)
    assert [job.tenant_id for job in leased[:6]] == ["a", "b", "c", "a", "b", "a"]
    assert [job.tenant_id for job in leased[6:]] == ["a"] * 24
    assert len({job.id for job in leased}) == 30


async def test_turns_span_the_queues_of_one_lease(engine: Engine, clock: TestClock) -> None:
    await enqueue(engine, "a", 5, queue="mail")
    await enqueue(engine, "a", 5, queue="sms", priority=1)
    await enqueue(engine, "b", 1, queue="sms")
    clock.advance(seconds=1)
    leased = await engine.lease(["mail", "sms"], max_jobs=4)
    assert [(job.tenant_id, job.queue_name) for job in leased] == [
        ("a", "sms"),
        ("b", "sms"),
        ("a", "sms"),
        ("a", "sms"),
    ]


async def test_tenants_held_back_by_flow_control_give_up_their_turn(engine: Engine, clock: TestClock) -> None:
    await enqueue(engine, "a", 20)
    await enqueue(engine, "b", 20)
    await enqueue(engine, "c", 20)
    await engine.configure_queue("a", "default", QueueSettingsPatch(concurrency_limit=2))
    await engine.configure_queue("b", "default", QueueSettingsPatch(paused=True))
    clock.advance(seconds=1)
    # The restricted claim serves in turn too: a until its limit, never b, c whenever a may not.
    assert await single_leases(engine, 5) == ["a", "c", "a", "c", "c"]
    leased = await engine.lease(["default"], max_jobs=6)
    assert [job.tenant_id for job in leased] == ["c"] * 6


async def test_a_scoped_key_leases_its_own_tenant_and_leaves_the_turn_alone(engine: Engine, clock: TestClock) -> None:
    for tenant in ("a", "b", "c"):
        await enqueue(engine, tenant, 3)
    clock.advance(seconds=1)
    assert await single_leases(engine, 1) == ["a"]
    assert [job.tenant_id for job in await engine.lease(["default"], max_jobs=2, scope="c")] == ["c", "c"]
    assert await single_leases(engine, 3) == ["b", "c", "a"]


async def test_the_store_claims_in_turns_after_the_tenant_its_previous_claim_served_last(
    store: Store, clock: TestClock
) -> None:
    engine = Engine(store, clock)
    for tenant in ("a", "b", "c", "d"):
        await enqueue(engine, tenant, 2)
    clock.advance(seconds=1)

    async def claim(max_jobs: int) -> list[str]:
        request = ClaimRequest(queues=["default"], max_jobs=max_jobs, now=clock.now(), lease_seconds=30)
        return [job.tenant_id for job in await store.job_claim(request)]

    assert await claim(2) == ["a", "b"]
    assert await claim(5) == ["c", "d", "a", "b", "c"]
    assert await claim(1) == ["d"]
    # A tenant that has no job left keeps its place in the turn.
    await enqueue(engine, "b", 1)
    await enqueue(engine, "bz", 1)
    assert await claim(2) == ["b", "bz"]
    await enqueue(engine, "a", 1)
    await enqueue(engine, "c", 1)
    assert await claim(1) == ["c"]
    assert await claim(1) == ["a"]


async def test_the_turn_is_the_stores_and_goes_on_from_any_engine(store: Store, clock: TestClock) -> None:
    """As several processes on one database: each lease goes on where the previous one, by any engine, stopped."""
    first, second = Engine(store, clock), Engine(store, clock)
    for tenant in ("a", "b", "c"):
        await enqueue(first, tenant, 4)
    clock.advance(seconds=1)
    assert await single_leases(first, 1) == ["a"]
    assert await single_leases(second, 1) == ["b"]
    assert [job.tenant_id for job in await first.lease(["default"], max_jobs=2)] == ["c", "a"]
    assert await single_leases(second, 2) == ["b", "c"]
    # The set of queues, whatever the order a lease names them in.
    await enqueue(first, "a", 1, queue="mail")
    assert [job.tenant_id for job in await first.lease(["mail", "default"], max_jobs=2)] == ["a", "b"]
    assert await single_leases(second, 1, ("default", "mail")) == ["c"]


async def test_concurrent_claims_across_tenants_never_take_the_same_job(store: Store, clock: TestClock) -> None:
    engine = Engine(store, clock)
    ids = [job_id for tenant in ("a", "b", "c") for job_id in await enqueue(engine, tenant, 30)]
    clock.advance(seconds=1)
    claims = await asyncio.gather(
        *(
            store.job_claim(ClaimRequest(queues=["default"], max_jobs=10, now=clock.now(), lease_seconds=30))
            for _ in range(9)
        )
    )
    claimed = [job.id for claim in claims for job in claim]
    assert len(set(claimed)) == len(claimed)
    # A claim skips the rows another one holds, so some may have come back short; none left a job behind.
    rest = await store.job_claim(ClaimRequest(queues=["default"], max_jobs=100, now=clock.now(), lease_seconds=30))
    assert sorted(claimed + [job.id for job in rest]) == sorted(ids)


# Concurrency keys under a key_concurrency_limit take turns within a tenant the same way.


async def enqueue_keyed(engine: Engine, clock: TestClock, tenant: str, key: str | None, n: int) -> list[str]:
    clock.advance(seconds=1)  # each call's jobs come after the previous call's in claim order
    results = await engine.enqueue_many(tenant, [NewJob(task_name="t", concurrency_key=key)] * n)
    return [result.job.id for result in results]


async def leased_keys(engine: Engine, n: int = 1, *, finish: bool = True) -> list[str | None]:
    """The keys one lease of up to n jobs served, in order; each job completed at once when `finish`."""
    jobs = await engine.lease(["default"], max_jobs=n)
    if finish:
        for job in jobs:
            await engine.complete(job.id, job.lease_token or "")
    return [job.concurrency_key for job in jobs]


async def test_one_keys_backlog_never_holds_the_other_keys_back_by_more_than_a_turn(
    engine: Engine, clock: TestClock
) -> None:
    await engine.configure_queue("a", "default", QueueSettingsPatch(key_concurrency_limit=10))
    await enqueue_keyed(engine, clock, "a", "user-1", 200)
    keys = [f"user-{i}" for i in range(2, 51)]
    for key in keys:
        await enqueue_keyed(engine, clock, "a", key, 2)
    served = [key for _ in range(50) for key in await leased_keys(engine)]
    # 50 keys: every one within the first 50 single leases, though user-1's 200 jobs come first in claim order.
    assert sorted(served, key=str) == sorted(["user-1", *keys], key=str)
    assert [key for _ in range(3) for key in await leased_keys(engine)] == ["user-1", "user-10", "user-11"]


async def test_a_multi_job_lease_takes_the_keys_round_robin_starting_after_the_key_served_last(
    engine: Engine, clock: TestClock
) -> None:
    await enqueue_keyed(engine, clock, "a", "k1", 10)
    await enqueue_keyed(engine, clock, "a", "k3", 1)
    await enqueue_keyed(engine, clock, "a", "k2", 10)
    await engine.configure_queue("a", "default", QueueSettingsPatch(key_concurrency_limit=3))
    # In code-point order of the keys, each key's jobs in claim order.
    assert await leased_keys(engine, 5) == ["k1", "k2", "k3", "k1", "k2"]
    # The next lease goes on after k2, and skips a key at its limit: k1 and k2 have 3 slots each.
    assert await leased_keys(engine, 1, finish=False) == ["k1"]
    assert await leased_keys(engine, 10, finish=False) == ["k2", "k1", "k2", "k1", "k2"]
    assert await leased_keys(engine, 10) == []


async def test_a_job_without_a_key_keeps_its_place_in_claim_order(engine: Engine, clock: TestClock) -> None:
    await enqueue_keyed(engine, clock, "a", "k1", 3)
    await enqueue_keyed(engine, clock, "a", None, 1)
    await enqueue_keyed(engine, clock, "a", "k2", 3)
    await engine.configure_queue("a", "default", QueueSettingsPatch(key_concurrency_limit=5))
    # No key limit holds it, so it takes no turn: the keyed jobs fill their own places in key turns around it.
    assert await leased_keys(engine, 7) == ["k1", "k2", "k1", None, "k2", "k1", "k2"]


async def test_keys_take_turns_within_each_tenant_and_tenants_between_each_other(
    engine: Engine, clock: TestClock
) -> None:
    for tenant in ("a", "b"):
        await engine.configure_queue(tenant, "default", QueueSettingsPatch(key_concurrency_limit=5))
        await enqueue_keyed(engine, clock, tenant, "x", 5)
        await enqueue_keyed(engine, clock, tenant, "y", 5)
    leased = await engine.lease(["default"], max_jobs=6)
    assert [(job.tenant_id, job.concurrency_key) for job in leased] == [
        ("a", "x"),
        ("b", "x"),
        ("a", "y"),
        ("b", "y"),
        ("a", "x"),
        ("b", "x"),
    ]


async def test_without_a_key_limit_keys_are_leased_in_claim_order(engine: Engine, clock: TestClock) -> None:
    await engine.configure_queue("a", "default", QueueSettingsPatch(concurrency_limit=10))
    await enqueue_keyed(engine, clock, "a", "k1", 3)
    await enqueue_keyed(engine, clock, "a", "k2", 3)
    assert await leased_keys(engine, 4) == ["k1", "k1", "k1", "k2"]


async def test_the_key_turn_is_the_stores_and_goes_on_from_any_engine(store: Store, clock: TestClock) -> None:
    first, second = Engine(store, clock), Engine(store, clock)
    await first.configure_queue("a", "default", QueueSettingsPatch(key_concurrency_limit=2))
    for key in ("k1", "k2", "k3"):
        await enqueue_keyed(first, clock, "a", key, 3)
    assert await leased_keys(first) == ["k1"]
    assert await leased_keys(second) == ["k2"]
    assert await leased_keys(first, 2) == ["k3", "k1"]
    assert await leased_keys(second) == ["k2"]


async def test_a_tenant_whose_most_urgent_job_is_not_due_yet_still_gets_its_turn(
    engine: Engine, clock: TestClock
) -> None:
    # PostgreSQL takes a tenant's first pending job in claim order as proof that it has a claimable one, and looks
    # further only when that job is not due or a task filter applies: both must still find the tenant's due jobs.
    await engine.enqueue_many("a", [NewJob(task_name="later", priority=9, delay_seconds=60)])
    (a_due,) = await enqueue(engine, "a", 1)
    await enqueue(engine, "b", 5)
    clock.advance(seconds=1)
    taken = await engine.lease(["default"], max_jobs=2)
    assert sorted(job.tenant_id for job in taken) == ["a", "b"]
    assert a_due in {job.id for job in taken}
    await engine.enqueue_many("c", [NewJob(task_name="other")])
    await enqueue(engine, "c", 1)
    await enqueue(engine, "d", 1)
    clock.advance(seconds=1)
    only_t = await engine.lease(["default"], max_jobs=3, task_names=["t"])
    assert sorted(job.tenant_id for job in only_t) == ["b", "c", "d"]
    assert {job.task_name for job in only_t} == {"t"}
