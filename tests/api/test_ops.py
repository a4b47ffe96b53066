"""Operations: liveness, readiness, Prometheus metrics, and a store that has gone away."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from httpx import ASGITransport, AsyncClient
from queueflow import __version__
from queueflow.api import create_app
from queueflow.clocks import TestClock
from queueflow.core.errors import StoreUnavailable
from queueflow.core.pressure import HorizonHolder, Pressure
from queueflow.settings import Settings, SettingsError
from queueflow.stores.memory import InMemoryJobStore

from tests.api.conftest import SETTINGS, TENANT_A, TENANT_B, WORKER, assert_problem, enqueue, lease


class DownStore(InMemoryJobStore):
    """A store whose database is unreachable."""

    async def ping(self) -> None:
        raise StoreUnavailable("connection refused")

    async def job_get(self, job_id: str, *, tenant_id: str | None = None) -> None:
        raise StoreUnavailable("connection refused")


def client_for(app: object) -> AsyncClient:
    return AsyncClient(transport=ASGITransport(app=app), base_url="http://testserver")  # type: ignore[arg-type]


async def test_healthz_and_readyz(client: AsyncClient) -> None:
    health = await client.get("/healthz")
    ready = await client.get("/readyz")
    assert (health.status_code, health.json()) == (200, {"status": "ok", "version": __version__})
    assert (ready.status_code, ready.json()) == (200, {"status": "ok", "version": __version__})


async def test_every_answer_says_which_server_version_gave_it(client: AsyncClient) -> None:
    answers = [
        await client.get("/healthz"),
        await client.get("/v1/queues", headers=TENANT_A),
        await client.get("/v1/jobs/job_nope", headers=TENANT_A),  # a problem
        await client.get("/v1/queues"),  # no credential
        await client.get("/no/such/route"),  # unrouted
        await client.get("/metrics"),
    ]
    assert [answer.headers.get("queueflow-version") for answer in answers] == [__version__] * len(answers)


async def test_an_unreachable_store_is_503_unavailable_with_retry_after(clock: TestClock) -> None:
    app = create_app(SETTINGS, store=DownStore(), clock=clock)
    async with client_for(app) as client:
        assert (await client.get("/healthz")).status_code == 200
        ready = await client.get("/readyz")
        job = await client.get("/v1/jobs/job_1", headers=TENANT_A)
        scrape = await client.get("/metrics")

    for response in (ready, job):
        assert_problem(response, 503, "unavailable")
        assert response.headers["retry-after"] == "1"
    assert scrape.status_code == 200  # the process's own counters are still served


async def test_metrics_count_requests_job_outcomes_depth_and_lease_wait(client: AsyncClient, clock: TestClock) -> None:
    await enqueue(client, queue_name="mail")
    clock.advance(1)
    await enqueue(client, queue_name="mail", max_retries=0)
    clock.advance(1)
    await enqueue(client, TENANT_B, queue_name="mail")
    await enqueue(client, queue_name="sms", delay_seconds=60)
    clock.advance(2)
    first, second, third = await lease(client, ["mail"], max_jobs=3)
    await client.post(
        f"/v1/worker/jobs/{first['id']}/complete", json={"lease_token": first["lease_token"]}, headers=WORKER
    )
    await client.post(
        "/v1/worker/ack",
        json={"fail": [{"id": job["id"], "lease_token": job["lease_token"], "error": "x"} for job in (second, third)]},
        headers=WORKER,
    )
    await client.get("/v1/nowhere")

    text = (await client.get("/metrics")).text

    assert 'queueflow_jobs_enqueued_total{queue="mail"} 3.0' in text
    assert 'queueflow_jobs_enqueued_total{queue="sms"} 1.0' in text
    assert 'queueflow_jobs_completed_total{queue="mail"} 1.0' in text
    assert 'queueflow_jobs_failed_total{queue="mail"} 2.0' in text
    assert 'queueflow_jobs_dead_lettered_total{queue="mail"} 1.0' in text
    assert 'queueflow_queue_depth{queue="mail",state="completed"} 1.0' in text  # summed over both tenants
    assert 'queueflow_queue_depth{queue="mail",state="dead_letter"} 1.0' in text
    assert 'queueflow_queue_depth{queue="mail",state="retrying"} 1.0' in text
    assert 'queueflow_queue_depth{queue="sms",state="scheduled"} 1.0' in text
    assert 'queueflow_lease_wait_seconds_count{queue="mail"} 3.0' in text
    assert 'queueflow_lease_wait_seconds_sum{queue="mail"} 9.0' in text  # 4 + 3 + 2 s after becoming due
    assert 'queueflow_http_requests_total{method="POST",route="/v1/jobs",status="201"} 4.0' in text
    assert 'queueflow_http_requests_total{method="GET",route="unmatched",status="404"} 1.0' in text
    assert (
        'queueflow_http_request_duration_seconds_count{method="POST",route="/v1/worker/lease",status="200"} 1.0' in text
    )
    assert 'route="/v1/worker/jobs/{job_id}/complete"' in text  # the route template, not the job id


async def test_metrics_on_the_in_memory_store_show_no_tables_and_no_held_horizon(client: AsyncClient) -> None:
    await enqueue(client)

    text = (await client.get("/metrics")).text

    assert "queueflow_table_size_bytes{" not in text
    assert "queueflow_table_dead_tuples{" not in text
    assert "queueflow_oldest_transaction_age_seconds 0.0" in text
    assert "queueflow_oldest_xmin_age_seconds 0.0" in text
    assert "queueflow_oldest_xmin_age_transactions 0.0" in text


class SlowCounts(InMemoryJobStore):
    """A store whose queue counts fail (as a jobs table too large to count in time would) while its pressure
    answers: someone has held the horizon for a minute."""

    def __init__(self, clock: TestClock) -> None:
        super().__init__()
        self.clock = clock

    async def queue_overview(self, *args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailable("statement timeout")

    async def store_pressure(self) -> Pressure:
        holder = HorizonHolder(
            pid=7,
            application_name="psql",
            state="idle in transaction",
            xact_start=self.clock.now() - timedelta(minutes=1),
            query_start=None,
            age_transactions=500,
        )
        return Pressure(oldest_xact_start=holder.xact_start, horizon=holder)


async def test_pressure_is_refreshed_even_when_the_depths_are_not(clock: TestClock) -> None:
    async with client_for(create_app(SETTINGS, store=SlowCounts(clock), clock=clock)) as client:
        text = (await client.get("/metrics")).text

    assert "queueflow_oldest_xmin_age_seconds 60.0" in text
    assert "queueflow_oldest_xmin_age_transactions 500.0" in text
    assert "queueflow_queue_depth{" not in text


async def test_every_app_has_its_own_metrics(clock: TestClock) -> None:
    apps = [create_app(Settings(), store=InMemoryJobStore(), clock=clock) for _ in range(2)]
    async with client_for(apps[0]) as first, client_for(apps[1]) as second:
        await first.post("/v1/jobs", json={"task_name": "t"})
        assert 'queueflow_jobs_enqueued_total{queue="default"} 1.0' in (await first.get("/metrics")).text
        assert "queueflow_jobs_enqueued_total{" not in (await second.get("/metrics")).text


# The app is built by the fixtures (a `settings` parameter overrides that fixture) before the test body runs:
# building it configures logging, which would drop the handler caplog has installed by then.
@pytest.mark.parametrize("settings", [replace(SETTINGS, access_log="all")])
async def test_each_request_is_logged_once_as_json(client: AsyncClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="queueflow.access"):
        await client.get("/v1/queues", headers={**TENANT_A, "User-Agent": "queueflow-python/9.9.9"})
    (record,) = [r for r in caplog.records if r.name == "queueflow.access"]
    line = json.loads(record.getMessage())
    assert line["method"] == "GET"
    assert line["path"] == "/v1/queues"
    assert line["status"] == 200
    assert line["tenant"] == "tenant-a"
    assert line["user_agent"] == "queueflow-python/9.9.9"  # which SDK, and which version, called
    assert line["duration_ms"] >= 0


@pytest.mark.parametrize(
    ("settings", "logged"), [(SETTINGS, [404]), (replace(SETTINGS, access_log="off"), [])], ids=["errors", "off"]
)
async def test_the_access_log_keeps_only_what_it_is_set_to(
    client: AsyncClient, caplog: pytest.LogCaptureFixture, logged: list[int]
) -> None:
    with caplog.at_level(logging.INFO, logger="queueflow.access"):
        assert (await client.get("/v1/queues", headers=TENANT_A)).status_code == 200
        assert (await client.get("/v1/jobs/job_missing", headers=TENANT_A)).status_code == 404
    statuses = [json.loads(r.getMessage())["status"] for r in caplog.records if r.name == "queueflow.access"]
    assert statuses == logged


def test_the_access_log_setting_is_checked() -> None:
    assert Settings.load({"QUEUEFLOW_ACCESS_LOG": "all"}).access_log == "all"
    assert Settings.load({}).access_log == "errors"
    with pytest.raises(SettingsError, match="access_log"):
        Settings.load({"QUEUEFLOW_ACCESS_LOG": "loud"})
