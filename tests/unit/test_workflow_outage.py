"""A workflow advancement the store cannot make after the job's write succeeded is left to the janitor."""

from __future__ import annotations

from datetime import datetime

from queueflow.clocks import TestClock
from queueflow.core.errors import StoreUnavailable
from queueflow.core.finish import StepReport
from queueflow.core.waits import DueWait
from queueflow.core.workflow import NewStep, NewWorkflow, StepStatus
from queueflow.stores.memory import InMemoryJobStore
from queueflow.testing import make_engine


class FlakyStore(InMemoryJobStore):
    """Refuses advancements while `down` (the job writes before them go through)."""

    down = False

    async def workflow_step_finish(self, report: StepReport, *, now: datetime) -> tuple[DueWait, ...] | None:
        if self.down:
            raise StoreUnavailable("the database went away")
        return await super().workflow_step_finish(report, now=now)


async def test_a_lost_advancement_does_not_fail_the_complete_and_the_janitor_heals_it() -> None:
    store = FlakyStore()
    engine = make_engine(store)
    new = NewWorkflow(
        name="wf", steps=[NewStep(name="a", task_name="a"), NewStep(name="b", task_name="b", depends_on=["a"])]
    )
    workflow, _ = await engine.create_workflow("t", new)
    (job,) = await engine.lease(["default"])
    store.down = True
    done = await engine.complete(job.id, job.lease_token or "", "A")  # answers: the job's write succeeded
    assert done.result == "A"
    assert (await engine.get_workflow("t", workflow.id)).steps[1].status is StepStatus.PENDING
    assert isinstance(engine.clock, TestClock)
    engine.clock.advance(seconds=engine.settings.heal_after.total_seconds() + 1)
    assert (await engine.run_maintenance()).healed == 0  # still down: logged, nothing lost
    store.down = False
    assert (await engine.run_maintenance()).healed == 1
    healed = await engine.get_workflow("t", workflow.id)
    assert [s.status for s in healed.steps] == [StepStatus.COMPLETED, StepStatus.ENQUEUED]
