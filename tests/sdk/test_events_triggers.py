"""Triggers and events through the SDK against the real app in-process: `triggers.create/list/get/update/delete`
and `events.send(name, payload, id=)`, async and sync."""

from __future__ import annotations

import pytest
from queueflow_client import ArgumentError, AsyncQueueFlow, InvalidStateError, NotFoundError, QueueFlow, steps
from queueflow_client.resources import Events, Triggers

from tests.sdk.conftest import BASE

FULFIL = steps.workflow("fulfil", [steps.task("pack", "pack"), steps.task("ship", "ship", depends_on=["pack"])])


async def test_triggers_round_trip_and_an_event_starts_them(client: AsyncQueueFlow) -> None:
    created = await client.triggers.create("receipt", event="order.paid", task={"task_name": "send_receipt"})
    assert (created.name, created.event, created.filter, created.enabled) == ("receipt", "order.paid", {}, True)
    assert created.task is not None
    assert created.task["task_name"] == "send_receipt"
    await client.triggers.create("fulfil", event="order.*", filter={"plan": "pro"}, workflow=FULFIL)
    assert {trigger.name async for trigger in client.triggers.list()} == {"fulfil", "receipt"}
    assert (await client.triggers.get("fulfil")).workflow is not None

    accepted = await client.events.send("order.paid", {"order": 7, "plan": "pro"}, id="order-7")
    assert accepted.event_id == "order-7"
    kinds = {item.trigger: (item.job_id is not None, item.workflow_id is not None) for item in accepted.started}
    assert kinds == {"receipt": (True, False), "fulfil": (False, True)}
    again = await client.events.send("order.paid", {"order": 7, "plan": "pro"}, id="order-7")
    assert again == accepted
    job = await client.jobs.get(next(item.job_id for item in accepted.started if item.job_id))
    assert job.payload["_event"] == {"id": "order-7", "name": "order.paid", "payload": {"order": 7, "plan": "pro"}}

    unnamed = await client.events.send("order.paid")  # the client makes its id: its own retries start nothing twice
    assert unnamed.event_id.startswith("qf-client-")
    assert [item.trigger for item in unnamed.started] == ["receipt"]

    updated = await client.triggers.update("receipt", enabled=False)
    assert not updated.enabled
    assert (await client.events.send("order.paid")).started == []
    await client.triggers.delete("receipt")
    with pytest.raises(NotFoundError):
        await client.triggers.get("receipt")


async def test_a_trigger_takes_a_task_or_a_workflow_and_a_name_once(client: AsyncQueueFlow) -> None:
    with pytest.raises(ArgumentError, match="give one"):
        await client.triggers.create("both", event="x", task={"task_name": "t"}, workflow=FULFIL)
    with pytest.raises(ArgumentError, match="give one"):
        await client.triggers.create("neither", event="x")
    await client.triggers.create("once", event="x", task={"task_name": "t"})
    with pytest.raises(InvalidStateError):
        await client.triggers.create("once", event="x", task={"task_name": "t"})


def test_the_sync_client_has_them_too() -> None:
    with QueueFlow(BASE, "key-a") as client:
        assert isinstance(client.triggers, Triggers)
        assert isinstance(client.events, Events)
