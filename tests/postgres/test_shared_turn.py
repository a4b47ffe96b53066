"""The fairness turn is the database's, not a process's (README.md, "Fairness"): engines on separate stores (separate
pools, as separate `queueflow serve` processes have, on one host or many) serve the tenants of a queue in turn
together; and taking the turn never makes one claim wait for another."""

from __future__ import annotations

import asyncio

from queueflow.clocks import TestClock
from queueflow.core.types import NewJob
from queueflow.engine import Engine
from queueflow.stores.postgres import PostgresJobStore

from tests import pg
from tests.moments import START
from tests.postgres.helpers import engine_on
from tests.postgres.test_concurrency import stores

TENANTS = ("a", "b", "c")


async def backlogs(engine: Engine, clock: TestClock, jobs: int = 40) -> None:
    for tenant in TENANTS:
        await engine.enqueue_many(tenant, [NewJob(task_name="t")] * jobs)
    clock.advance(seconds=1)


def windows_missing_a_tenant(served: list[str], width: int) -> list[list[str]]:
    return [served[i : i + width] for i in range(len(served) - width + 1) if len(set(served[i : i + width])) < 3]


async def test_single_leases_alternating_between_two_processes_serve_every_tenant_in_every_three(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    async with stores(postgres_url, 2) as (one, two):
        engines = [engine_on(one, clock, seed=1), engine_on(two, clock, seed=2)]
        await backlogs(engines[0], clock)
        served = [(await engines[n % 2].lease(["default"]))[0].tenant_id for n in range(60)]
    assert windows_missing_a_tenant(served, 3) == []
    assert served[:6] == ["a", "b", "c", "a", "b", "c"]


async def test_the_turn_of_a_set_of_queues_is_one_whatever_order_a_lease_names_them_in(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    async with stores(postgres_url, 2) as (one, two):
        first, second = engine_on(one, clock, seed=1), engine_on(two, clock, seed=2)
        for queue in ("mail", "sms"):
            for tenant in TENANTS:
                await first.enqueue_many(tenant, [NewJob(task_name="t", queue_name=queue)] * 4)
        clock.advance(seconds=1)
        served = [(await first.lease(["mail", "sms"]))[0].tenant_id, (await second.lease(["sms", "mail"]))[0].tenant_id]
        served += [(await first.lease(["sms", "mail"]))[0].tenant_id]
    assert served == ["a", "b", "c"]


async def test_a_claim_never_waits_for_one_that_holds_the_turn(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    """A claim in flight holds the turn's row from the moment it moves the turn until it commits: another claim takes
    its jobs meanwhile, and leaves the turn to it (as if it had run first)."""
    clock = TestClock(START)
    engine = engine_on(postgres_store, clock)
    await backlogs(engine, clock)
    assert [job.tenant_id for job in await engine.lease(["default"])] == ["a"]
    async with pg.connect(postgres_url) as holder, holder.transaction():
        held = await holder.fetchval("SELECT tenant_id FROM queueflow.claim_turns FOR UPDATE")
        assert held == "a"
        leased = await asyncio.wait_for(engine.lease(["default"]), timeout=5)
        assert [job.tenant_id for job in leased] == ["b"]
    # That claim served b but could not move the turn, so the next claim serves b again, then goes on.
    assert [(await engine.lease(["default"]))[0].tenant_id for _ in range(4)] == ["b", "c", "a", "b"]


async def test_concurrent_leasers_on_four_processes_serve_the_tenants_in_turn(postgres_url: str) -> None:
    """Claims that overlap read the same turn and may serve the same tenant (as concurrent leases always could in one
    process), but the turn still goes round (`claim.fair_sql.turn_moved`): with 4 claims in flight no tenant is passed
    over for long — here within 2 x 4 x 3 leases, listed in the order they return (not quite the order they
    committed, on a busy machine)."""
    clock = TestClock(START)
    order: list[str] = []
    async with stores(postgres_url, 4) as claimers:
        await pg.empty(postgres_url)
        await backlogs(engine_on(claimers[0], clock), clock, jobs=60)
        start_line = asyncio.Barrier(4)

        async def leaser(store: PostgresJobStore, seed: int) -> None:
            engine = engine_on(store, clock, seed=seed)
            await start_line.wait()
            for _ in range(30):
                (job,) = await engine.lease(["default"])
                order.append(job.tenant_id)

        await asyncio.gather(*(leaser(store, n) for n, store in enumerate(claimers)))
    assert len(order) == 120
    assert windows_missing_a_tenant(order, 2 * 4 * 3) == []
