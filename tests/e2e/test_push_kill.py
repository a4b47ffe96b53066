"""The delivering server is SIGKILLed mid-request and the receiver restarted (issue 45's chaos case, as one live
test): nothing is lost, each job completes once, only the deliveries in flight at the kill are made twice, and the
endpoint's concurrency is never exceeded at the receiver, the dead server's slots included (they expire with their
hold, as its leases do)."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter

from queueflow.core.endpoints import NewEndpoint
from queueflow.core.types import NewJob
from queueflow.stores.postgres import PostgresJobStore

from tests import pg
from tests.delivery.conftest import engine_on
from tests.delivery.live import all_completed, pushing_server
from tests.delivery.receiver import receiving
from tests.moments import T

JOBS = 20
CONCURRENCY = 5


async def test_a_server_killed_mid_request_loses_nothing_and_never_exceeds_the_concurrency(postgres_url: str) -> None:
    await pg.empty(postgres_url)
    async with PostgresJobStore.from_url(postgres_url, pool_size=2) as store:
        engine = engine_on(store)
        async with receiving() as first:
            first.hold = asyncio.Event()  # every request waits: the kill comes with CONCURRENCY in flight
            port = int(first.url.split(":")[2].split("/")[0])
            await engine.endpoints.create(
                T, NewEndpoint(name="hooks", url=first.url, concurrency=CONCURRENCY, timeout_seconds=2)
            )
            jobs = [enqueued.job.id for enqueued in await engine.enqueue_many(T, [NewJob(task_name="t")] * JOBS)]
            doomed = pushing_server(postgres_url)
            try:
                await first.wait_for(CONCURRENCY, within=60)
            finally:
                doomed.send_signal(signal.SIGKILL)
                doomed.wait()
            in_flight = {delivery.headers["queueflow-job-id"] for delivery in first.deliveries}
        # The receiver restarts on its port, and a new server takes over.
        async with receiving(port=port) as second:
            survivor = pushing_server(postgres_url)
            try:
                async with asyncio.timeout(90):
                    while not await all_completed(store, jobs):  # noqa: ASYNC110
                        await asyncio.sleep(0.1)  # a server in another process: polling its outcome is all there is
            finally:
                survivor.terminate()
                survivor.wait()
    assert len(in_flight) == CONCURRENCY
    assert (first.peak, second.peak <= CONCURRENCY) == (CONCURRENCY, True)
    delivered = Counter(delivery.headers["queueflow-job-id"] for delivery in first.deliveries + second.deliveries)
    assert set(delivered) == set(jobs)  # nothing lost
    assert {job_id for job_id, count in delivered.items() if count > 1} <= in_flight  # duplicates: the kill's only
    answered = Counter(delivery.headers["queueflow-job-id"] for delivery in second.deliveries)
    assert set(answered) == set(jobs)  # each completed by a 2xx of the restarted receiver …
    assert max(answered.values()) == 1  # … and by one only
    redelivered = [d for d in second.deliveries if d.headers["queueflow-job-id"] in in_flight]
    assert {d.headers["queueflow-delivery"] for d in redelivered} == {"2"}
