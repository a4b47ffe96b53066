"""Builders and a test worker for the workflow contract tests."""

from __future__ import annotations

from queueflow.core.types import JSON, Job
from queueflow.core.waits import Wait
from queueflow.core.workflow import NewStep, NewWorkflow, OnFailure, Step, Workflow
from queueflow.engine import Engine

from tests.moments import T

HALT, SKIP, CONTINUE = OnFailure.HALT, OnFailure.SKIP, OnFailure.CONTINUE


def step(name: str, *depends_on: str, on_failure: OnFailure = HALT, **fields: JSON) -> NewStep:
    return NewStep(name=name, task_name=f"do-{name}", depends_on=list(depends_on), on_failure=on_failure, **fields)


def dag(
    *steps: NewStep, name: str = "wf", context: dict[str, JSON] | None = None, key: str | None = None
) -> NewWorkflow:
    return NewWorkflow(name=name, steps=list(steps), context=context or {}, idempotency_key=key)


def statuses(workflow: Workflow) -> dict[str, str]:
    return {s.name: s.status.value for s in workflow.steps}


def named(workflow: Workflow, name: str) -> Step:
    (found,) = [s for s in workflow.steps if s.name == name]
    return found


class Worker:
    """Leases whatever is due and acts on a step's job by the step's name, as a real worker would."""

    def __init__(self, engine: Engine, tenant_id: str = T) -> None:
        self.engine = engine
        self.tenant_id = tenant_id
        self.held: dict[str, Job] = {}

    async def job_of(self, workflow_id: str, name: str) -> Job:
        """The step's job, leased by this worker."""
        workflow = await self.engine.get_workflow(self.tenant_id, workflow_id)
        job_id = named(workflow, name).job_id
        assert job_id is not None, f"step {name} has no job"
        if job_id not in self.held:
            for job in await self.engine.lease(["default"], max_jobs=1000):
                self.held[job.id] = job
        return self.held[job_id]

    async def complete(self, workflow_id: str, name: str, result: JSON = None) -> Workflow:
        job = await self.job_of(workflow_id, name)
        await self.engine.complete(job.id, job.lease_token or "", {"by": name} if result is None else result)
        del self.held[job.id]
        return await self.engine.get_workflow(self.tenant_id, workflow_id)

    async def dead_letter(self, workflow_id: str, name: str) -> Workflow:
        job = await self.job_of(workflow_id, name)
        await self.engine.fail(job.id, job.lease_token or "", "boom", retryable=False)
        del self.held[job.id]
        return await self.engine.get_workflow(self.tenant_id, workflow_id)

    async def cancel(self, workflow_id: str, name: str) -> Workflow:
        workflow = await self.engine.get_workflow(self.tenant_id, workflow_id)
        await self.engine.cancel_job(self.tenant_id, named(workflow, name).job_id or "")
        return await self.engine.get_workflow(self.tenant_id, workflow_id)

    async def end(self, workflow_id: str, name: str, outcome: str) -> Workflow:
        """End the step's job as `outcome` says: completed, dead_letter or cancelled."""
        if outcome == "completed":
            return await self.complete(workflow_id, name)
        if outcome == "dead_letter":
            return await self.dead_letter(workflow_id, name)
        return await self.cancel(workflow_id, name)


def sleep(name: str, seconds: float, *depends_on: str, on_failure: OnFailure = HALT) -> NewStep:
    return NewStep(name=name, wait=Wait(seconds=seconds), depends_on=list(depends_on), on_failure=on_failure)


def signal(
    name: str, signal_name: str, *depends_on: str, timeout: float | None = None, on_failure: OnFailure = HALT
) -> NewStep:
    return NewStep(
        name=name,
        wait=Wait(signal=signal_name, timeout_seconds=timeout),
        depends_on=list(depends_on),
        on_failure=on_failure,
    )
