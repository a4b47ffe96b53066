"""A cron schedule on a live `queueflow serve` (PostgreSQL, scheduler ticking every 0.2 s), through HTTP only.

Waiting for a real minute boundary would make this test take up to a minute, or be skipped most of the time.
Instead the test checks the first occurrence the server computed from its own clock, then moves that occurrence
into the past in the database — the state a schedule is in once its minute has come — and waits, on a
long-polling lease rather than a sleep, for the live scheduler loop to fire it.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from tests import pg
from tests.e2e.live import live_server

KEYS = {"QUEUEFLOW_API_KEYS": "tenant-key=tenant-a", "QUEUEFLOW_WORKER_KEYS": "worker-key"}
TENANT = {"Authorization": "Bearer tenant-key"}
WORKER = {"Authorization": "Bearer worker-key"}
MINUTE = timedelta(minutes=1)


def test_a_schedule_created_over_http_fires_from_the_live_scheduler(database_url: str) -> None:
    with (
        live_server("--database-url", database_url, "--scheduler-interval", "0.2", env=KEYS) as base,
        httpx.Client(base_url=base, timeout=30) as client,
    ):
        response = client.post(
            "/v1/schedules",
            json={"name": "minutely", "cron": "* * * * *", "task_name": "tick", "queue_name": "cron"},
            headers=TENANT,
        )
        assert response.status_code == 201, response.text
        schedule = response.json()
        created_at = _time(schedule["created_at"])
        assert abs(created_at - datetime.now(UTC)) < MINUTE
        assert _time(schedule["next_run_at"]) == created_at.replace(second=0, microsecond=0) + MINUTE

        pg.blocking(lambda: _make_due(database_url, schedule["id"]))
        leased = client.post("/v1/worker/lease", json={"queues": ["cron"], "wait_seconds": 20}, headers=WORKER).json()[
            "jobs"
        ]

        assert len(leased) == 1, "the scheduler did not fire the due schedule within 20 s"
        (job,) = leased
        occurrence = _time(job["metadata"]["occurrence"])
        assert job["metadata"]["schedule"] == "minutely"
        assert (job["task_name"], job["tenant_id"]) == ("tick", "tenant-a")
        assert occurrence == occurrence.replace(second=0, microsecond=0)
        after = _advanced(client, "minutely")
        assert _time(after["last_run_at"]) == occurrence
        assert _time(after["next_run_at"]) == occurrence + MINUTE
        found = client.get("/v1/jobs", params={"metadata": '{"schedule": "minutely"}'}, headers=TENANT).json()
        assert [item["id"] for item in found["items"]] == [job["id"]]


async def _make_due(url: str, schedule_id: str) -> None:
    async with pg.connect(url) as connection:
        status: Any = await connection.execute(
            "UPDATE queueflow.schedules SET next_run_at = date_trunc('minute', now()) - interval '1 minute'"
            " WHERE id = $1",
            schedule_id,
        )
    assert status == "UPDATE 1"


def _advanced(client: httpx.Client, name: str) -> dict[str, Any]:
    """The schedule once its firing is recorded. The job is inserted first and the schedule advanced after it, so a
    worker may hold the job a moment before that; over HTTP there is no event for it to wait on, hence polling."""
    deadline = time.monotonic() + 10
    while True:
        schedule: dict[str, Any] = client.get(f"/v1/schedules/{name}", headers=TENANT).json()
        if schedule["last_run_at"] is not None or time.monotonic() > deadline:
            return schedule
        time.sleep(0.05)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)
