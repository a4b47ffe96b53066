"""Two servers on one PostgreSQL database deliver to one endpoint: together they never have more than its
`concurrency` requests in flight (the receiver counts), and every job is delivered and completed once."""

from __future__ import annotations

import asyncio

from queueflow.core.endpoints import Endpoint, NewEndpoint
from queueflow.core.types import JobStatus, NewJob
from queueflow.runtime.delivery import Deliveries
from queueflow.runtime.delivery.pusher import Observer
from queueflow.runtime.wakeups import Wakeups
from queueflow.stores.postgres import PostgresJobStore

from tests import pg
from tests.delivery.conftest import engine_on
from tests.delivery.receiver import receiving
from tests.moments import T

JOBS = 40
CONCURRENCY = 5


async def test_two_servers_never_exceed_the_endpoints_concurrency(postgres_url: str) -> None:
    await pg.empty(postgres_url)
    hubs = [Wakeups(), Wakeups()]
    stores = [PostgresJobStore.from_url(postgres_url, pool_size=4, wakeups=hub) for hub in hubs]
    engines = [engine_on(store) for store in stores]
    try:
        async with receiving() as receiver:
            receiver.work_seconds = 0.02  # each answer takes a moment, so deliveries overlap
            await engines[0].endpoints.create(
                T, NewEndpoint(name="hooks", url=receiver.url, concurrency=CONCURRENCY, timeout_seconds=30)
            )
            ended = [0, 0]
            all_ended = asyncio.Event()

            def observer(number: int) -> Observer:
                def observe(endpoint: Endpoint, outcome: str, seconds: float) -> None:
                    ended[number] += 1
                    if sum(ended) == JOBS:
                        all_ended.set()

                return observe

            services = [
                Deliveries(engine, hub, max_body_bytes=1024, refresh=0.05, poll=0.2, observe=observer(number))
                for number, (engine, hub) in enumerate(zip(engines, hubs, strict=True))
            ]
            for service in services:
                await service.start()
            jobs = await engines[0].enqueue_many(T, [NewJob(task_name="send") for _ in range(JOBS)])
            try:
                async with asyncio.timeout(60):
                    await all_ended.wait()  # observed once a delivery's outcome and counters are recorded
            finally:
                for service in services:
                    await service.stop()
            read = await engines[1].endpoints.get(T, "hooks")
            assert receiver.peak <= CONCURRENCY
            assert (read.delivered, read.failed, read.in_flight) == (JOBS, 0, 0)
            ids = [delivery.headers["queueflow-job-id"] for delivery in receiver.deliveries]
            assert sorted(ids) == sorted(enqueued.job.id for enqueued in jobs)  # each once
            done = await engines[0].store.job_get_many(ids)
            assert {job.status for job in done.values()} == {JobStatus.COMPLETED}
    finally:
        for store in stores:
            await store.aclose()


async def test_a_server_gets_no_slot_while_another_holds_them_all(postgres_url: str) -> None:
    await pg.empty(postgres_url)
    hubs = [Wakeups(), Wakeups()]
    stores = [PostgresJobStore.from_url(postgres_url, pool_size=4, wakeups=hub) for hub in hubs]
    first, second = (engine_on(store) for store in stores)
    try:
        async with receiving() as receiver:
            receiver.hold = asyncio.Event()
            await first.endpoints.create(T, NewEndpoint(name="hooks", url=receiver.url, concurrency=3))
            await first.enqueue_many(T, [NewJob(task_name="send") for _ in range(5)])
            async with Deliveries(first, hubs[0], max_body_bytes=1024, refresh=0.05, poll=0.2):
                await receiver.wait_for(3)
                other = Deliveries(second, hubs[1], max_body_bytes=1024, refresh=0.05, poll=0.2)
                await other.sync()
                (pusher,) = other.pushers.values()
                try:
                    assert await pusher._claim(3) is None  # every slot is the first server's
                    assert (await second.endpoints.get(T, "hooks")).in_flight == 3
                finally:
                    await pusher.close()
                receiver.hold.set()
                await receiver.wait_for(5)
            assert receiver.peak == 3
    finally:
        for store in stores:
            await store.aclose()
