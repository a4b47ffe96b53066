from __future__ import annotations

from queueflow.core.types import AckOutcome, AckResult, Completion, FailureRequest, JobStatus, NewJob
from queueflow.engine import Engine
from queueflow.ports import JobStore

T = "tenant-a"


async def test_ping_answers_while_the_store_is_reachable(store: JobStore) -> None:
    assert await store.ping() is None


async def test_ack_settles_each_item_on_its_own_and_names_its_queue(engine: Engine) -> None:
    for queue in ("mail", "mail", "sms"):
        await engine.enqueue(T, NewJob(task_name="t", queue_name=queue, max_retries=0))
    done, stale, failed = await engine.lease(["mail", "sms"], max_jobs=3)

    results = await engine.ack(
        [Completion(done.id, done.lease_token or "", {"ok": 1}), Completion(stale.id, "stale")],
        [
            FailureRequest(job_id=failed.id, lease_token=failed.lease_token or "", error="boom"),
            FailureRequest(job_id="job_missing", lease_token="x", error="boom"),
        ],
    )

    assert results == [
        AckResult(done.id, AckOutcome.OK, JobStatus.COMPLETED, done.queue_name),
        AckResult(stale.id, AckOutcome.LEASE_LOST, JobStatus.RUNNING, stale.queue_name),
        AckResult(failed.id, AckOutcome.OK, JobStatus.DEAD_LETTER, failed.queue_name),
        AckResult("job_missing", AckOutcome.LEASE_LOST, None, None),
    ]
