"""Worker routes: lease, heartbeat, complete, fail, ack, and the long-poll lease."""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

import pytest
from httpx import AsyncClient
from queueflow.api import create_app
from queueflow.clocks import TestClock
from queueflow.core.types import ClaimRequest, Job, NewJob
from queueflow.engine import Engine
from queueflow.stores.memory import InMemoryJobStore

from tests.api.conftest import SETTINGS, TENANT_A, TENANT_B, WORKER, assert_lease_lost, assert_problem, enqueue, lease
from tests.inprocess import WatchedWakeups


async def test_lease_returns_leased_jobs_in_turns_across_tenants(client: AsyncClient, clock: TestClock) -> None:
    low = await enqueue(client, priority=-5)
    clock.advance(1)
    high_b = await enqueue(client, TENANT_B, priority=5, timeout_seconds=60)
    clock.advance(1)
    mid = await enqueue(client, queue_name="other")

    jobs = await lease(client, ["default", "other"], max_jobs=10, lease_seconds=120)

    # Each tenant's best job first (tenant-a's across both queues, then tenant-b's), then tenant-a's next one.
    assert [job["id"] for job in jobs] == [mid["id"], high_b["id"], low["id"]]
    b = jobs[1]
    assert b["status"] == "running"
    assert b["tenant_id"] == "tenant-b"
    assert b["lease_token"]
    assert b["delivery_count"] == 1
    assert b["deadline"] == "2026-03-01T12:01:02Z"  # claim time + timeout_seconds
    assert b["locked_until"] == "2026-03-01T12:01:02Z"  # the lease is capped at the deadline
    assert jobs[0]["deadline"] is None


async def test_lease_of_task_names_leaves_other_tasks_for_other_workers(client: AsyncClient) -> None:
    resize = await enqueue(client, task_name="resize")
    mail = await enqueue(client, task_name="send_email")
    assert [job["id"] for job in await lease(client, max_jobs=10, task_names=["send_email"])] == [mail["id"]]
    assert await lease(client, max_jobs=10, task_names=["send_email"], wait_seconds=0.01) == []
    assert [job["id"] for job in await lease(client, max_jobs=10)] == [resize["id"]]
    for bad in ([], ["x" * 201], ["nul\u0000"], "resize"):
        response = await client.post(
            "/v1/worker/lease", json={"queues": ["default"], "task_names": bad}, headers=WORKER
        )
        assert_problem(response, 400, "validation_error")


async def test_lease_with_nothing_claimable_answers_an_empty_list(client: AsyncClient) -> None:
    await enqueue(client, delay_seconds=60)
    assert await lease(client) == []


async def test_heartbeat_extends_the_lease(client: AsyncClient, clock: TestClock) -> None:
    await enqueue(client)
    (job,) = await lease(client, lease_seconds=10)
    clock.advance(5)

    response = await client.post(
        f"/v1/worker/jobs/{job['id']}/heartbeat", json={"lease_token": job["lease_token"]}, headers=WORKER
    )

    assert response.status_code == 200
    assert response.json() == {"locked_until": "2026-03-01T12:00:35Z"}  # now + the default 30 s


async def test_heartbeat_complete_and_fail_with_a_stale_token_are_lease_lost(
    client: AsyncClient,
) -> None:
    await enqueue(client)
    (job,) = await lease(client)
    await assert_lease_lost(client, job["id"], "not-the-token")


async def test_worker_routes_answer_404_for_a_job_that_does_not_exist(client: AsyncClient) -> None:
    for action, body in [
        ("heartbeat", {"lease_token": "t"}),
        ("complete", {"lease_token": "t"}),
        ("fail", {"lease_token": "t", "error": "boom"}),
    ]:
        response = await client.post(f"/v1/worker/jobs/job_missing/{action}", json=body, headers=WORKER)
        assert_problem(response, 404, "not_found")


async def test_complete_records_the_result_and_hides_the_token(client: AsyncClient) -> None:
    await enqueue(client)
    (job,) = await lease(client)

    response = await client.post(
        f"/v1/worker/jobs/{job['id']}/complete",
        json={"lease_token": job["lease_token"], "result": {"sent": 3}},
        headers=WORKER,
    )

    assert response.status_code == 200
    done = response.json()
    assert done["status"] == "completed"
    assert done["result"] == {"sent": 3}
    assert done["completed_at"] == "2026-03-01T12:00:00Z"
    assert "lease_token" not in done
    again = await client.post(
        f"/v1/worker/jobs/{job['id']}/complete", json={"lease_token": job["lease_token"]}, headers=WORKER
    )
    assert_problem(again, 409, "lease_lost")


async def test_fail_retries_with_backoff_then_dead_letters(client: AsyncClient, clock: TestClock) -> None:
    await enqueue(client, max_retries=1, backoff={"strategy": "fixed", "base_seconds": 10, "jitter": False})
    (job,) = await lease(client)

    response = await client.post(
        f"/v1/worker/jobs/{job['id']}/fail",
        json={"lease_token": job["lease_token"], "error": "smtp down"},
        headers=WORKER,
    )
    retrying = response.json()
    assert response.status_code == 200
    assert retrying["status"] == "retrying"
    assert retrying["retry_count"] == 1
    assert retrying["next_retry_at"] == retrying["scheduled_at"] == "2026-03-01T12:00:10Z"
    assert retrying["error_message"] == "smtp down"

    clock.advance(10)
    (again,) = await lease(client)
    response = await client.post(
        f"/v1/worker/jobs/{job['id']}/fail",
        json={"lease_token": again["lease_token"], "error": "still down"},
        headers=WORKER,
    )
    assert response.json()["status"] == "dead_letter"


async def test_fail_not_retryable_or_with_retry_after(client: AsyncClient) -> None:
    await enqueue(client, task_name="a")
    await enqueue(client, task_name="b")
    first, second = await lease(client, max_jobs=2)

    fatal = await client.post(
        f"/v1/worker/jobs/{first['id']}/fail",
        json={"lease_token": first["lease_token"], "error": "bad input", "retryable": False},
        headers=WORKER,
    )
    later = await client.post(
        f"/v1/worker/jobs/{second['id']}/fail",
        json={"lease_token": second["lease_token"], "error": "rate limited", "retry_after_seconds": 90},
        headers=WORKER,
    )

    assert fatal.json()["status"] == "dead_letter"
    assert later.json()["status"] == "retrying"
    assert later.json()["scheduled_at"] == "2026-03-01T12:01:30Z"


async def test_a_cancelled_jobs_worker_gets_lease_lost(client: AsyncClient) -> None:
    await enqueue(client)
    (job,) = await lease(client)
    await client.post(f"/v1/jobs/{job['id']}/cancel", headers=TENANT_A)

    response = await client.post(
        f"/v1/worker/jobs/{job['id']}/complete", json={"lease_token": job["lease_token"]}, headers=WORKER
    )
    assert_problem(response, 409, "lease_lost")


async def test_an_expired_lease_reclaimed_by_the_janitor_is_lease_lost(
    client: AsyncClient, store: InMemoryJobStore, clock: TestClock
) -> None:
    await enqueue(client)
    (job,) = await lease(client, lease_seconds=5)
    clock.advance(6)
    report = await Engine(store, clock).run_maintenance()
    assert report.reclaimed == 1

    response = await client.post(
        f"/v1/worker/jobs/{job['id']}/complete", json={"lease_token": job["lease_token"]}, headers=WORKER
    )
    assert_problem(response, 409, "lease_lost")


async def test_an_expired_lease_is_lease_lost_before_any_janitor(client: AsyncClient, clock: TestClock) -> None:
    await enqueue(client)
    (job,) = await lease(client, lease_seconds=5)
    clock.advance(5)  # locked_until has come: the lease is over, though no janitor has reclaimed the job
    await assert_lease_lost(client, job["id"], job["lease_token"])


async def test_ack_settles_each_item_on_its_own(client: AsyncClient) -> None:
    for name in ("a", "b", "c"):
        await enqueue(client, task_name=name)
    a, b, c = await lease(client, max_jobs=3)

    response = await client.post(
        "/v1/worker/ack",
        json={
            "complete": [
                {"id": a["id"], "lease_token": a["lease_token"], "result": 1},
                {"id": b["id"], "lease_token": "stale"},
            ],
            "fail": [
                {"id": c["id"], "lease_token": c["lease_token"], "error": "no", "retryable": False},
                {"id": "job_missing", "lease_token": "x", "error": "no"},
            ],
        },
        headers=WORKER,
    )

    assert response.status_code == 200
    assert response.json() == {
        "results": [
            {"id": a["id"], "outcome": "ok", "status": "completed"},
            {"id": b["id"], "outcome": "lease_lost", "status": "running"},
            {"id": c["id"], "outcome": "ok", "status": "dead_letter"},
            {"id": "job_missing", "outcome": "lease_lost", "status": None},
        ]
    }


@pytest.mark.parametrize("body", [{}, {"complete": []}, {"complete": [], "fail": []}])
async def test_an_empty_ack_is_ok_with_no_results(client: AsyncClient, body: dict[str, list[object]]) -> None:
    response = await client.post("/v1/worker/ack", json=body, headers=WORKER)
    assert response.status_code == 200, response.text
    assert response.json() == {"results": []}


async def test_batched_heartbeat_extends_each_held_lease_on_its_own(client: AsyncClient, clock: TestClock) -> None:
    await enqueue(client, priority=1)
    await enqueue(client, timeout_seconds=20)
    plain, capped = await lease(client, max_jobs=2, lease_seconds=10)
    clock.advance(5)

    response = await client.post(
        "/v1/worker/heartbeat",
        json={
            "jobs": [
                {"id": plain["id"], "lease_token": plain["lease_token"]},
                {"id": capped["id"], "lease_token": capped["lease_token"]},
                {"id": plain["id"], "lease_token": "stale"},
                {"id": "job_missing", "lease_token": "x"},
            ],
            "lease_seconds": 60,
        },
        headers=WORKER,
    )

    assert response.status_code == 200, response.text
    assert response.json() == {
        "results": [
            {"id": plain["id"], "outcome": "ok", "locked_until": "2026-03-01T12:01:05Z"},
            {"id": capped["id"], "outcome": "ok", "locked_until": "2026-03-01T12:00:20Z"},  # the timeout caps it
            {"id": plain["id"], "outcome": "lease_lost", "locked_until": None},
            {"id": "job_missing", "outcome": "lease_lost", "locked_until": None},
        ]
    }


async def test_batched_heartbeat_keeps_a_lease_from_the_janitor_and_defaults_to_30_s(
    client: AsyncClient, clock: TestClock
) -> None:
    await enqueue(client)
    (job,) = await lease(client, lease_seconds=10)
    clock.advance(9)
    body = {"jobs": [{"id": job["id"], "lease_token": job["lease_token"]}]}
    response = await client.post("/v1/worker/heartbeat", json=body, headers=WORKER)
    assert response.json()["results"][0]["locked_until"] == "2026-03-01T12:00:39Z"
    clock.advance(20)  # past the first lease's end, within the extended one
    complete = {"lease_token": job["lease_token"]}
    response = await client.post(f"/v1/worker/jobs/{job['id']}/complete", json=complete, headers=WORKER)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"jobs": []},
        {"jobs": [{"id": "job_x", "lease_token": "t"}] * 1001},
        {"jobs": [{"id": "job_x", "lease_token": "t"}], "lease_seconds": 0},
        {"jobs": [{"id": "job_x", "lease_token": "t", "progress": "nul\u0000"}]},
        {"jobs": [{"id": "job_x", "lease_token": "t", "progress": "x" * 65_536}]},
        {"jobs": [{"id": "job_x", "lease_token": "t", "unknown": 1}]},
    ],
)
async def test_batched_heartbeat_rejects_a_bad_body(client: AsyncClient, body: dict[str, object]) -> None:
    response = await client.post("/v1/worker/heartbeat", json=body, headers=WORKER)
    assert_problem(response, 400, "validation_error")


async def test_lease_requires_queues(client: AsyncClient) -> None:
    for body in ({}, {"queues": []}, {"queues": ["bad queue"]}, {"queues": ["default"], "wait_seconds": 61}):
        response = await client.post("/v1/worker/lease", json=body, headers=WORKER)
        assert_problem(response, 400, "validation_error")


# ---- long-poll ------------------------------------------------------------------------------------


async def test_a_parked_lease_returns_the_moment_a_job_arrives(client: AsyncClient, wakeups: WatchedWakeups) -> None:
    parked = asyncio.create_task(
        client.post("/v1/worker/lease", json={"queues": ["mail"], "wait_seconds": 30}, headers=WORKER)
    )
    await wakeups.until_waiting(1)

    job = await enqueue(client, queue_name="mail")

    async with asyncio.timeout(5):
        response = await parked
    assert [leased["id"] for leased in response.json()["jobs"]] == [job["id"]]
    assert wakeups.waiting == 0


async def test_a_parked_lease_says_how_long_after_its_arrival_it_claimed(
    client: AsyncClient, wakeups: WatchedWakeups
) -> None:
    # A worker counts a lease and a deadline from its request's sending plus this: from the sending alone, a poll
    # that waited longer than a job's timeout made every job it brought look past its deadline.
    assert [job["claimed_after_seconds"] for job in await lease(client)] == []
    await enqueue(client)
    assert [job["claimed_after_seconds"] for job in await lease(client)] == [0]  # it did not wait
    sent = time.monotonic()
    parked = asyncio.create_task(
        client.post("/v1/worker/lease", json={"queues": ["mail"], "wait_seconds": 30}, headers=WORKER)
    )
    await wakeups.until_waiting(1)
    await enqueue(client, queue_name="mail")
    async with asyncio.timeout(5):
        response = await parked
    answered = time.monotonic() - sent
    (job,) = response.json()["jobs"]
    # The claim came after the poll parked, and never later than the answer: a bound the worker can trust.
    assert 0 < job["claimed_after_seconds"] <= answered


async def test_a_closing_hub_answers_parked_leases_at_once_with_no_jobs(
    client: AsyncClient, wakeups: WatchedWakeups
) -> None:
    parked = asyncio.create_task(
        client.post("/v1/worker/lease", json={"queues": ["mail"], "wait_seconds": 30}, headers=WORKER)
    )
    await wakeups.until_waiting(1)

    wakeups.close()  # what `queueflow serve` does on SIGTERM

    async with asyncio.timeout(5):
        response = await parked
    assert (response.status_code, response.json()) == (200, {"jobs": []})
    await enqueue(client, queue_name="mail")
    late = await client.post("/v1/worker/lease", json={"queues": ["mail"], "wait_seconds": 30}, headers=WORKER)
    assert len(late.json()["jobs"]) == 1, "a closing server still hands out what is claimable"
    assert wakeups.waiting == 0


async def test_parked_leases_share_the_hub_and_each_job_goes_to_one(
    client: AsyncClient, wakeups: WatchedWakeups
) -> None:
    body = {"queues": ["mail"], "wait_seconds": 30}
    first = asyncio.create_task(client.post("/v1/worker/lease", json=body, headers=WORKER))
    second = asyncio.create_task(client.post("/v1/worker/lease", json=body, headers=WORKER))
    other = asyncio.create_task(
        client.post("/v1/worker/lease", json={"queues": ["sms"], "wait_seconds": 30}, headers=WORKER)
    )
    await wakeups.until_waiting(3)

    one = await enqueue(client, queue_name="mail")
    done, _ = await asyncio.wait([first, second], timeout=5, return_when=asyncio.FIRST_COMPLETED)
    (winner,) = done
    loser = second if winner is first else first
    assert [job["id"] for job in winner.result().json()["jobs"]] == [one["id"]]
    await wakeups.until_waiting(2)  # the loser parked again; the sms lease never woke

    two = await enqueue(client, queue_name="mail")
    three = await enqueue(client, queue_name="sms")
    async with asyncio.timeout(5):
        assert [job["id"] for job in (await loser).json()["jobs"]] == [two["id"]]
        assert [job["id"] for job in (await other).json()["jobs"]] == [three["id"]]


async def test_a_parked_lease_answers_empty_at_its_deadline(client: AsyncClient, wakeups: WatchedWakeups) -> None:
    await enqueue(client, queue_name="elsewhere")
    jobs = await lease(client, ["mail"], wait_seconds=0.05)
    assert jobs == []
    assert wakeups.waiting == 0


class ClaimGate(InMemoryJobStore):
    """A store whose claims wait at a gate, so a test can let a client leave while one runs; `entered` is set once a
    claim waits there, `claimed` once a claim has taken its jobs."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()
        self.claimed = asyncio.Event()

    async def job_claim(self, request: ClaimRequest) -> list[Job]:
        self.entered.set()
        await self.gate.wait()
        jobs = await super().job_claim(request)
        self.claimed.set()
        return jobs


@pytest.mark.parametrize("wait_seconds", [0, 30])
@pytest.mark.parametrize("leaves", ["during the claim", "as the claim ends"])
async def test_jobs_claimed_for_a_client_that_left_before_its_answer_are_handed_back_uncounted(
    clock: TestClock, wakeups: WatchedWakeups, wait_seconds: float, leaves: str
) -> None:
    store = ClaimGate()
    app = create_app(SETTINGS, store=store, clock=clock, wakeups=wakeups, rng=random.Random(7))
    engine = Engine(store, clock)
    job = (await engine.enqueue("tenant-a", NewJob(task_name="t", queue_name="mail"))).job
    body = json.dumps({"queues": ["mail"], "wait_seconds": wait_seconds}).encode()
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []
    left = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        if leaves == "during the claim":
            await left.wait()
        else:  # the disconnect comes in with the claim's last step, before the answer is written
            await store.claimed.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": "/v1/worker/lease", "raw_path": b"/v1/worker/lease", "query_string": b"", "root_path": "",
        "headers": [(b"authorization", b"Bearer key-w"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1), "server": ("testserver", 80),
    }  # fmt: skip
    async with asyncio.timeout(5):
        answering = asyncio.create_task(app(scope, receive, send))
        await store.entered.wait()
        if leaves == "during the claim":
            left.set()
        store.gate.set()
        await answering

    answer = json.loads(
        b"".join(message.get("body", b"") for message in sent if message["type"] == "http.response.body")
    )
    assert answer == {"jobs": []}
    back = await engine.get_job("tenant-a", job.id)
    assert (back.status, back.delivery_count, back.lease_token) == ("pending", 0, None)
    (again,) = await engine.lease(["mail"])
    assert (again.id, again.delivery_count) == (job.id, 1)


async def test_a_lease_with_task_names_takes_only_those_tasks(client: AsyncClient) -> None:
    mine = await enqueue(client, task_name="mine")
    theirs = await enqueue(client, task_name="theirs", priority=9)
    jobs = await lease(client, max_jobs=10, task_names=["mine", "other"])
    assert [job["id"] for job in jobs] == [mine["id"]]
    assert [job["id"] for job in await lease(client, max_jobs=10)] == [theirs["id"]]
    for bad in ([], [""], ["x" * 201]):
        response = await client.post(
            "/v1/worker/lease", json={"queues": ["default"], "task_names": bad}, headers=WORKER
        )
        assert_problem(response, 400, "validation_error")
