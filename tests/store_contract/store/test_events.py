"""The `TriggerStore` and `EventStore` methods, called directly on every store, each against its docstring in
`ports`: triggers as rows, and an event that starts every enabled matching trigger — exact names, prefixes, filters
compared as JSON — in one all-or-nothing operation, once per (tenant, id)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from queueflow.core.errors import InvalidState, ValidationError
from queueflow.core.events import Event, Started
from queueflow.core.jsonvalue import MAX_DEPTH
from queueflow.core.triggers import Trigger
from queueflow.core.types import JobQuery, JobStatus, NewJob
from queueflow.core.workflow import NewStep, NewWorkflow, WorkflowQuery, WorkflowStatus
from queueflow.ports import Store

from tests.moments import START, T
from tests.store_contract.store_rows import OTHER, at, nested, newest_first, pages

FLOW = NewWorkflow(
    name="fulfil",
    steps=[NewStep(name="pack", task_name="pack"), NewStep(name="ship", task_name="ship", depends_on=["pack"])],
)


def trigger(name: str = "on-paid", event: str = "order.paid", *, seconds: float = 0, **fields: Any) -> Trigger:
    """A trigger of T created `seconds` after START, starting a `receipt` job unless given a workflow."""
    if "workflow" not in fields:
        fields.setdefault("task", NewJob(task_name="receipt", queue_name="mail", payload={"copies": 2}))
    return Trigger(
        **{
            "id": f"trg_{name}",
            "tenant_id": T,
            "name": name,
            "event": event,
            "filter": {},
            "task": None,
            "workflow": None,
            "enabled": True,
            "created_at": at(seconds),
            "updated_at": at(seconds),
            **fields,
        }
    )


def event(name: str = "order.paid", event_id: str = "evt-1", tenant: str = T, **payload: Any) -> Event:
    return Event(tenant_id=tenant, id=event_id, name=name, payload=payload, received_at=at(60))


async def keep(store: Store, *rows: Trigger) -> None:
    for row in rows:
        await store.trigger_insert(row)


async def started_by(store: Store, sent: Event) -> list[str]:
    recorded, created = await store.event_insert(sent)
    assert created
    return [item.trigger for item in recorded.started]


async def jobs_of(store: Store, tenant: str = T) -> list[Any]:
    return await store.job_list(JobQuery(tenant_id=tenant, limit=1000))


# ---- triggers as rows -------------------------------------------------------------------------------------


async def test_a_trigger_is_kept_as_given_and_read_by_name(store: Store) -> None:
    job_trigger = trigger(filter={"plan": "pro", "n": [1, {"a": None}]})
    flow_trigger = trigger("flow", workflow=FLOW, task=None, seconds=1)
    assert await store.trigger_insert(job_trigger) == job_trigger
    assert await store.trigger_insert(flow_trigger) == flow_trigger
    assert await store.trigger_get("on-paid", tenant_id=T) == job_trigger
    assert await store.trigger_get("flow", tenant_id=T) == flow_trigger
    assert await store.trigger_get("on-paid", tenant_id=OTHER) is None
    assert await store.trigger_get("nul\x00", tenant_id=T) is None


async def test_a_taken_name_is_invalid_state_and_another_tenant_has_its_own(store: Store) -> None:
    await keep(store, trigger())
    with pytest.raises(InvalidState):
        await store.trigger_insert(replace(trigger(event="x", seconds=1), id="trg_2"))
    await store.trigger_insert(replace(trigger(), id="trg_3", tenant_id=OTHER))


async def test_a_trigger_it_cannot_store_is_a_validation_error(store: Store) -> None:
    with pytest.raises(ValidationError):
        await store.trigger_insert(trigger(filter={"x": "nul\x00"}))
    with pytest.raises(ValidationError):
        await store.trigger_insert(trigger(filter={"x": nested(MAX_DEPTH)}))
    assert await store.trigger_list(tenant_id=T, limit=10, after=None) == []


async def test_the_list_pages_newest_first(store: Store) -> None:
    rows = [trigger(f"t{index}", seconds=index % 3) for index in range(7)]
    await keep(store, *rows)
    listed = await pages(lambda after: store.trigger_list(tenant_id=T, limit=3, after=after))
    assert [row_id for page in listed for row_id in page] == newest_first(rows)
    assert await store.trigger_list(tenant_id=OTHER, limit=10, after=None) == []


async def test_update_is_a_compare_and_set_on_updated_at(store: Store) -> None:
    read = trigger()
    await keep(store, read)
    edited = replace(read, event="order.*", enabled=False, filter={"a": 1}, updated_at=at(5), name="ignored")
    stored = await store.trigger_update(edited, expected_updated_at=read.updated_at)
    assert stored == replace(edited, name="on-paid")
    assert await store.trigger_update(replace(edited, updated_at=at(6)), expected_updated_at=read.updated_at) is None
    assert await store.trigger_update(replace(edited, tenant_id=OTHER), expected_updated_at=at(5)) is None
    # A version of a trigger is its (id, updated_at): an update must move updated_at forward.
    assert await store.trigger_update(replace(edited, enabled=True), expected_updated_at=at(5)) is None
    assert await store.trigger_get("on-paid", tenant_id=T) == stored


async def test_delete(store: Store) -> None:
    await keep(store, trigger())
    assert not await store.trigger_delete("on-paid", tenant_id=OTHER)
    assert await store.trigger_delete("on-paid", tenant_id=T)
    assert not await store.trigger_delete("on-paid", tenant_id=T)
    assert await store.trigger_get("on-paid", tenant_id=T) is None


# ---- events: matching ---------------------------------------------------------------------------------------


async def test_an_event_starts_its_jobs_and_workflows_in_creation_order(store: Store) -> None:
    await keep(
        store, trigger("b", seconds=2), trigger("a", seconds=1), trigger("flow", workflow=FLOW, task=None, seconds=3)
    )
    recorded, created = await store.event_insert(event(order=7))
    assert created
    assert [item.trigger for item in recorded.started] == ["a", "b", "flow"]
    job_ids = {item.job_id for item in recorded.started if item.job_id is not None}
    [workflow_id] = [item.workflow_id for item in recorded.started if item.workflow_id is not None]
    jobs = {job.id: job for job in await jobs_of(store)}
    seen = {"id": "evt-1", "name": "order.paid", "payload": {"order": 7}}
    for job_id in job_ids:
        job = jobs[job_id]
        assert (job.status, job.queue_name, job.task_name, job.scheduled_at) == (
            JobStatus.PENDING,
            "mail",
            "receipt",
            at(60),
        )
        assert job.payload == {"copies": 2, "_event": seen}
        assert job.metadata["event"] == "evt-1"
    workflow = await store.workflow_get(workflow_id, tenant_id=T)
    assert workflow is not None
    assert (workflow.status, workflow.context) == (WorkflowStatus.RUNNING, {"event": seen})
    [root] = [job for job in jobs.values() if job.workflow_id == workflow_id]
    assert (root.workflow_step_id, root.payload["_context"]) == ("pack", {"event": seen})


async def test_exact_names_and_prefixes(store: Store) -> None:
    await keep(
        store,
        trigger("exact", "order.eu.paid", seconds=1),
        trigger("orders", "order.*", seconds=2),
        trigger("eu", "order.eu.*", seconds=3),
        trigger("bare", "order", seconds=4),
        trigger("other", "invoice.*", seconds=5),
    )
    assert await started_by(store, event("order.eu.paid", "1")) == ["exact", "orders", "eu"]
    assert await started_by(store, event("order.us.paid", "2")) == ["orders"]
    assert await started_by(store, event("order", "3")) == ["bare"]
    assert await started_by(store, event("orders.paid", "4")) == []
    assert await started_by(store, event("order.", "5")) == ["orders"]


@pytest.mark.parametrize(
    ("filter", "payload", "matched"),
    [
        ({"plan": "pro"}, {"plan": "pro", "x": 1}, True),
        ({"n": 3}, {"n": "3"}, False),
        ({"n": 1}, {"n": 1.0}, True),
        ({"n": 1.5}, {"n": 1.5}, True),
        ({"n": 10**20}, {"n": 10**20}, True),
        ({"n": 10**20}, {"n": 10**20 + 1}, False),
        ({"b": True}, {"b": 1}, False),
        ({"b": False}, {"b": 0}, False),
        ({"z": None}, {}, False),
        ({"z": None}, {"z": None}, True),
        ({"o": {"a": 1, "b": [1, 2]}}, {"o": {"b": [1, 2.0], "a": 1}}, True),
        ({"o": {"a": 1}}, {"o": {"a": 1, "b": 2}}, False),
        ({"o": {}}, {"o": {"a": 1}}, False),
        ({"l": [1, 2]}, {"l": [2, 1]}, False),
        ({"l": [1]}, {"l": [1, 1]}, False),
        ({"l": []}, {"l": {}}, False),
        ({"s": "é"}, {"s": "é"}, True),
        ({"a": 1, "b": 2}, {"a": 1}, False),
    ],
)
async def test_filters_compare_top_level_values_as_jsonb_does(
    store: Store, filter: dict[str, Any], payload: dict[str, Any], matched: bool
) -> None:
    await keep(store, trigger(filter=filter))
    assert await started_by(store, event(**payload)) == (["on-paid"] if matched else [])


async def test_disabled_triggers_and_other_tenants_start_nothing(store: Store) -> None:
    await keep(store, trigger(enabled=False), replace(trigger("theirs"), tenant_id=OTHER))
    assert await started_by(store, event()) == []
    read = await store.trigger_get("on-paid", tenant_id=T)
    assert read is not None
    await store.trigger_update(replace(read, enabled=True, updated_at=at(1)), expected_updated_at=read.updated_at)
    assert await started_by(store, event(event_id="again")) == ["on-paid"]


async def test_an_updated_pattern_is_matched_under_its_new_name_only(store: Store) -> None:
    read = trigger()
    await keep(store, read)
    await store.trigger_update(replace(read, event="invoice.*", updated_at=at(1)), expected_updated_at=read.updated_at)
    assert await started_by(store, event("order.paid", "1")) == []
    assert await started_by(store, event("invoice.sent", "2")) == ["on-paid"]
    await store.trigger_delete("on-paid", tenant_id=T)
    assert await started_by(store, event("invoice.sent", "3")) == []


async def test_many_triggers_of_one_event_are_one_operation(store: Store) -> None:
    await keep(store, *(trigger(f"t{index:04}", seconds=index) for index in range(300)))
    assert await started_by(store, event()) == [f"t{index:04}" for index in range(300)]
    assert len(await jobs_of(store)) == 300


# ---- events: once per id, all or nothing ---------------------------------------------------------------------


async def test_a_repeated_id_starts_nothing_and_answers_what_it_started_first(store: Store) -> None:
    await keep(store, trigger(), trigger("flow", workflow=FLOW, task=None, seconds=1))
    first, created = await store.event_insert(event(order=1))
    assert created
    await keep(store, trigger("later", seconds=2))
    again, created = await store.event_insert(event("order.paid", order=2))
    assert not created
    assert again == first
    assert len(await jobs_of(store)) == 2  # one receipt, one root step
    assert len(await store.workflow_list(WorkflowQuery(tenant_id=T, limit=10))) == 1
    _, created = await store.event_insert(event(tenant=OTHER))  # ids are per tenant
    assert created


async def test_an_event_whose_job_cannot_be_stored_starts_nothing(store: Store) -> None:
    await keep(store, trigger("flow", workflow=FLOW, task=None), trigger("receipt", seconds=1))
    # Storable as the event's payload, but two levels too deep under a job's `_event.payload`.
    too_deep = event(d=nested(MAX_DEPTH - 2))
    with pytest.raises(ValidationError):
        await store.event_insert(too_deep)
    assert await jobs_of(store) == []
    assert await store.workflow_list(WorkflowQuery(tenant_id=T, limit=10)) == []
    assert await store.event_list(tenant_id=T, limit=10, after=None) == []
    await store.trigger_delete("receipt", tenant_id=T)
    await store.trigger_delete("flow", tenant_id=T)
    assert await started_by(store, too_deep) == []  # the id was not kept: it goes through now


async def test_an_event_it_cannot_store_is_a_validation_error(store: Store) -> None:
    with pytest.raises(ValidationError):
        await store.event_insert(event(s="nul\x00"))
    with pytest.raises(ValidationError):
        await store.event_insert(event(event_id="nul\x00"))


# ---- the last events, and their pruning --------------------------------------------------------------------


async def test_events_are_listed_newest_first_with_what_they_started(store: Store) -> None:
    await keep(store, trigger())
    sent = [replace(event(event_id=f"e{index}"), received_at=at(index % 3)) for index in range(7)]
    for row in sent:
        await store.event_insert(row)
    listed = await pages(lambda after: store.event_list(tenant_id=T, limit=3, after=after))
    assert [row_id for page in listed for row_id in page] == newest_first(sent)
    [latest] = await store.event_list(tenant_id=T, limit=1, after=None)
    assert [item.trigger for item in latest.started] == ["on-paid"]
    assert latest.started[0] == Started(trigger="on-paid", job_id=latest.started[0].job_id)
    assert await store.event_list(tenant_id=OTHER, limit=10, after=None) == []


async def test_old_events_are_deleted_oldest_first_and_their_ids_are_free_again(store: Store) -> None:
    for index in range(5):
        await store.event_insert(
            replace(event(event_id=f"e{index}", tenant=[T, OTHER][index % 2]), received_at=at(index))
        )
    assert await store.event_delete_received(before=at(3), limit=2) == 2
    assert await store.event_delete_received(before=at(3), limit=10) == 1
    assert await store.event_delete_received(before=at(3), limit=10) == 0
    remaining = [row.id for row in await store.event_list(tenant_id=T, limit=10, after=None)]
    remaining += [row.id for row in await store.event_list(tenant_id=OTHER, limit=10, after=None)]
    assert sorted(remaining) == ["e3", "e4"]
    _, created = await store.event_insert(replace(event(event_id="e0"), received_at=START + timedelta(days=1)))
    assert created
