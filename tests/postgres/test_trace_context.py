"""A workflow's trace context on PostgreSQL: stored with the workflow, inherited by every step job, the later
ones enqueued by advancements included."""

from __future__ import annotations

from queueflow.clocks import TestClock
from queueflow.core.workflow import NewStep, NewWorkflow
from queueflow.stores.postgres import PostgresJobStore

from tests.moments import START, T
from tests.postgres.helpers import engine_on

CONTEXT = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "rojo=1"}


async def test_step_jobs_inherit_the_workflows_trace_context(postgres_store: PostgresJobStore) -> None:
    engine = engine_on(postgres_store, TestClock(START))
    steps = [NewStep(name="a", task_name="a"), NewStep(name="b", task_name="b", depends_on=["a"])]
    workflow, _ = await engine.create_workflow(T, NewWorkflow(name="two", steps=steps, trace_context=CONTEXT))
    assert (await engine.get_workflow(T, workflow.id)).trace_context == CONTEXT
    (first,) = await engine.lease(["default"])
    assert first.trace_context == CONTEXT
    await engine.complete(first.id, first.lease_token or "")
    (second,) = await engine.lease(["default"])
    assert (second.workflow_step_id, second.trace_context) == ("b", CONTEXT)
