"""`queueflow-client`, the operator CLI, against the real app in-process: tables for people, JSON for scripts."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from queueflow.clocks import TestClock
from queueflow.engine import Engine
from queueflow_client.cli import main

from tests.sdk.conftest import BASE


@pytest.fixture
def http(app: Litestar) -> Iterator[TestClient[Litestar]]:
    with TestClient(app) as client:
        yield client


class Cli:
    def __init__(self, http: TestClient[Litestar]) -> None:
        self.http = http

    def __call__(self, *argv: str, key: str = "key-a", code: int = 0) -> str:
        out = io.StringIO()
        assert main(["--url", BASE, "--api-key", key, *argv], http_client=self.http, out=out) == code
        return out.getvalue()

    def json(self, *argv: str) -> Any:
        return json.loads(self("--json", *argv))


@pytest.fixture
def cli(http: TestClient[Litestar]) -> Cli:
    return Cli(http)


async def dead_letter(engine: Engine, count: int) -> None:
    for leased in await engine.lease(["mail"], max_jobs=count):
        await engine.fail(leased.id, leased.lease_token or "", "smtp said no\nsecond line", retryable=False)


def test_enqueue_get_cancel_retry(cli: Cli) -> None:
    job = cli.json("jobs", "enqueue", "send_email", "--payload", '{"to": "ada"}', "--queue", "mail", "--priority", "3")
    assert (job["task_name"], job["queue_name"], job["priority"], job["payload"]) == (
        "send_email",
        "mail",
        3,
        {"to": "ada"},
    )
    shown = cli("jobs", "get", job["id"])
    assert f"id                {job['id']}\n" in shown
    assert 'payload           {"to": "ada"}\n' in shown
    assert cli.json("jobs", "cancel", job["id"])["status"] == "cancelled"
    assert cli.json("jobs", "retry", job["id"])["status"] == "pending"


def test_list_is_a_table_newest_first_and_filtered(cli: Cli, clock: TestClock) -> None:
    first = cli.json("jobs", "enqueue", "a")
    clock.advance(seconds=1)
    second = cli.json("jobs", "enqueue", "b", "--queue", "other")
    lines = cli("jobs", "list").splitlines()
    assert lines[0].split() == [
        "ID",
        "QUEUE_NAME",
        "TASK_NAME",
        "STATUS",
        "DELIVERY_COUNT",
        "SCHEDULED_AT",
        "ERROR_MESSAGE",
    ]
    assert [line.split()[0] for line in lines[1:]] == [second["id"], first["id"]]
    assert [job["id"] for job in cli.json("jobs", "list", "--queue", "other")] == [second["id"]]
    assert [job["id"] for job in cli.json("jobs", "list", "--limit", "1")] == [second["id"]]
    assert cli("jobs", "list", "--status", "dead_letter") == "(none)\n"


async def test_the_dead_letter_queue_lists_and_replays(cli: Cli, engine: Engine) -> None:
    ids = [cli.json("jobs", "enqueue", "send", "--queue", "mail", "--max-retries", "0")["id"] for _ in range(3)]
    cli.json("jobs", "enqueue", "other")
    await dead_letter(engine, 3)
    listed = cli("dlq", "list")
    assert "smtp said no second line" in listed  # one line per row, whatever the message holds
    assert sorted(job["id"] for job in cli.json("dlq", "list")) == sorted(ids)
    assert [job["status"] for job in cli.json("dlq", "replay", ids[0])] == ["pending"]
    replayed = cli.json("dlq", "replay", "--all", "--queue", "mail")
    assert sorted(job["id"] for job in replayed) == sorted(ids[1:])
    assert cli.json("dlq", "list") == []


def test_queues_workflows_and_schedules(cli: Cli, http: TestClient[Litestar]) -> None:
    cli.json("jobs", "enqueue", "a", "--queue", "mail")
    assert cli("queues").splitlines()[1].split()[:2] == ["mail", "1"]
    created = http.post(
        "/v1/workflows",
        json={
            "name": "etl",
            "steps": [{"name": "x", "task_name": "x"}, {"name": "y", "task_name": "y", "depends_on": ["x"]}],
        },
        headers={"Authorization": "Bearer key-a"},
    ).json()
    shown = cli("workflows", "get", created["id"])
    assert "status        running" in shown
    assert [line.split()[:3] for line in shown.split("\n\n")[1].splitlines()[1:]] == [
        ["x", "x", "enqueued"],
        ["y", "y", "pending"],
    ]
    http.post(
        "/v1/schedules",
        json={"name": "nightly", "cron": "0 3 * * *", "task_name": "report"},
        headers={"Authorization": "Bearer key-a"},
    )
    assert [schedule["name"] for schedule in cli.json("schedules", "list")] == ["nightly"]
    assert cli("schedules", "list").splitlines()[1].startswith("nightly  0 3 * * *  UTC")


def test_triggers_list_and_events_send(cli: Cli, http: TestClient[Litestar]) -> None:
    assert cli("triggers", "list") == "(none)\n"
    http.post(
        "/v1/triggers",
        json={"name": "receipt", "event": "order.*", "filter": {"plan": "pro"}, "task": {"task_name": "send_receipt"}},
        headers={"Authorization": "Bearer key-a"},
    )
    assert [trigger["name"] for trigger in cli.json("triggers", "list")] == ["receipt"]
    assert cli("triggers", "list").splitlines()[1].startswith('receipt  order.*  {"plan": "pro"}')
    sent = cli.json("events", "send", "order.paid", "--payload", '{"plan": "pro"}', "--id", "evt-1")
    assert sent["event_id"] == "evt-1"
    assert [item["trigger"] for item in sent["started"]] == ["receipt"]
    shown = cli("events", "send", "order.paid", "--payload", '{"plan": "free"}')
    assert shown.splitlines()[1] == "started   []"


def test_errors_are_one_line_and_an_exit_code(cli: Cli, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("jobs", "get", "job_missing", code=1) == ""
    assert capsys.readouterr().err.startswith("queueflow-client: 404 not_found: ")
    cli("queues", key="wrong", code=1)
    assert capsys.readouterr().err.startswith("queueflow-client: 401 unauthorized: ")
    cli("dlq", "replay", code=2)
    assert "give the ids of the jobs to replay, or --all" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        cli("jobs", "enqueue", "t", "--payload", "[1, 2]")
    assert usage.value.code == 2
    assert "--payload: must be a JSON object, not list" in capsys.readouterr().err


def test_url_and_key_come_from_the_environment(http: TestClient[Litestar], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUEUEFLOW_URL", BASE)
    monkeypatch.setenv("QUEUEFLOW_API_KEY", "key-b")
    out = io.StringIO()
    assert main(["--json", "jobs", "enqueue", "t"], http_client=http, out=out) == 0
    assert json.loads(out.getvalue())["tenant_id"] == "tenant-b"


def test_workflows_signal_and_retry(cli: Cli, http: TestClient[Litestar]) -> None:
    steps = [{"name": "draft", "task_name": "write"}, {"name": "ok", "depends_on": ["draft"], "wait": {"signal": "ok"}}]
    created = http.post(
        "/v1/workflows", json={"name": "review", "steps": steps}, headers={"Authorization": "Bearer key-a"}
    )
    workflow_id = created.json()["id"]
    signalled = cli.json("workflows", "signal", workflow_id, "ok", "--payload", "[1, 2]")
    assert [step["status"] for step in signalled["steps"]] == ["enqueued", "pending"]  # kept for when it waits
    shown = cli("workflows", "signal", workflow_id, "ok", "--payload", "[1, 2]")  # a repeat: nothing changes
    assert f"id            {workflow_id}\n" in shown
    assert "pending" in shown
    with pytest.raises(SystemExit) as usage:
        cli("workflows", "signal", workflow_id, "ok", "--payload", "{bad")
    assert usage.value.code == 2
    cli("workflows", "signal", workflow_id, "nope", code=1)
    cli("workflows", "retry", workflow_id, code=1)  # running: only a failed one is retried
    assert cli.json("workflows", "get", workflow_id)["status"] == "running"


def test_enqueue_with_a_unique_key_skips_a_repeat_and_lists_by_key(cli: Cli) -> None:
    first = cli.json("jobs", "enqueue", "sync", "--unique-key", "customer-1", "--payload", '{"n": 1}')
    assert first["unique_key"] == "customer-1"
    again = cli.json("jobs", "enqueue", "sync", "--unique-key", "customer-1", "--payload", '{"n": 2}')
    assert (again["id"], again["payload"]) == (first["id"], {"n": 1})
    debounced = cli.json("jobs", "enqueue", "hook", "--unique-key", "h", "--debounce", "5")
    replaced = cli.json("jobs", "enqueue", "hook", "--unique-key", "h", "--debounce", "5", "--payload", '{"n": 2}')
    assert (replaced["id"], replaced["payload"]) == (debounced["id"], {"n": 2})
    cli("jobs", "enqueue", "sync", "--unique-key", "customer-1", "--on-conflict", "error", code=1)  # 409 duplicate
    assert [job["id"] for job in cli.json("jobs", "list", "--unique-key", "customer-1")] == [first["id"]]
    cli("jobs", "enqueue", "sync", "--on-conflict", "error", code=2)  # a rule flag without its key


def test_enqueue_in_a_sequence_and_list_it(cli: Cli) -> None:
    first = cli.json("jobs", "enqueue", "post", "--sequence-key", "account-7", "--sequence-on-failure", "halt")
    second = cli.json("jobs", "enqueue", "post", "--sequence-key", "account-7")
    assert (first["sequence_key"], second["blocked_by"]) == ("account-7", None)
    listed = cli.json("jobs", "list", "--sequence-key", "account-7")
    assert [job["id"] for job in listed] == [second["id"], first["id"]]
    cli("jobs", "enqueue", "post", "--sequence-on-failure", "halt", code=2)  # the policy without its key


def test_enqueue_with_a_deadline(cli: Cli) -> None:
    job = cli.json("jobs", "enqueue", "offer", "--expires-in", "90")
    assert job["expires_at"] is not None
    assert datetime.fromisoformat(job["expires_at"]) - datetime.fromisoformat(job["created_at"]) == timedelta(
        seconds=90
    )
    cli("jobs", "enqueue", "offer", "--expires-in", "5", "--delay", "10", code=1)  # 400: not after its due time


def test_endpoints_list(cli: Cli, http: TestClient[Litestar]) -> None:
    assert cli("endpoints", "list") == "(none)\n"
    http.post(
        "/v1/endpoints",
        json={"name": "billing", "url": "https://93.184.215.14/hooks", "queues": ["billing"]},
        headers={"Authorization": "Bearer key-a"},
    )
    (listed,) = cli.json("endpoints", "list")
    assert (listed["name"], listed["in_flight"], listed["secret"][:7]) == ("billing", 0, "qfsec_…")
    assert cli("endpoints", "list").splitlines()[1].split()[:4] == [
        "billing",
        "https://93.184.215.14/hooks",
        '["billing"]',
        "False",
    ]
