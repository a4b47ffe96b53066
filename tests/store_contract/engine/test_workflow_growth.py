"""Steps added at run time (the HTTP contract, "A step that adds steps"): map/reduce, repeats, clashes, required_by, the
lease rules, and atomicity."""

from __future__ import annotations

import pytest
from msgspec.structs import replace
from queueflow.core.errors import InvalidState, LeaseLost, NotFound, ValidationError
from queueflow.core.types import Job, NewJob
from queueflow.core.workflow import CONTEXT_KEY, NewStep, StepStatus, WorkflowStatus
from queueflow.engine import Engine

from tests.store_contract.workflow_helpers import Worker, dag, named, signal, statuses, step

T = "tenant-a"


def mapped(count: int, *, required_by: tuple[str, ...] = ("reduce",)) -> list[NewStep]:
    return [
        NewStep(name=f"map_{i}", task_name="map", payload={"i": i}, required_by=list(required_by)) for i in range(count)
    ]


async def split_running(engine: Engine) -> tuple[str, Worker, Job]:
    workflow, _ = await engine.create_workflow(T, dag(step("split"), step("reduce", "split")))
    worker = Worker(engine, T)
    return workflow.id, worker, await worker.job_of(workflow.id, "split")


async def add(engine: Engine, job: Job, steps: list[NewStep]) -> list[str]:
    added = await engine.add_steps(job.id, job.lease_token or "", steps)
    return [f"{s.name}:{s.status.value}" for s in added]


async def test_split_adds_map_steps_that_reduce_waits_for_with_their_results(engine: Engine) -> None:
    workflow_id, worker, split = await split_running(engine)
    answer = await add(engine, split, mapped(3))
    # Their only dependency is none: enqueued at once, while split still runs.
    assert answer == ["map_0:enqueued", "map_1:enqueued", "map_2:enqueued"]
    grown = await engine.get_workflow(T, workflow_id)
    assert named(grown, "reduce").depends_on == ["split", "map_0", "map_1", "map_2"]
    assert [named(grown, f"map_{i}").added_by for i in range(3)] == ["split"] * 3
    assert named(grown, "split").added_by is None
    await worker.complete(workflow_id, "split")
    for i in range(3):
        assert named(await engine.get_workflow(T, workflow_id), "reduce").status is StepStatus.PENDING
        await worker.complete(workflow_id, f"map_{i}", {"n": i})
    reduce = await worker.job_of(workflow_id, "reduce")
    assert reduce.payload[CONTEXT_KEY] == {"split": {"by": "split"}, **{f"map_{i}": {"n": i} for i in range(3)}}
    assert (await worker.complete(workflow_id, "reduce")).status is WorkflowStatus.COMPLETED


async def test_a_new_step_waits_for_its_unfinished_dependencies_and_runs_after_them(engine: Engine) -> None:
    workflow_id, worker, split = await split_running(engine)
    answer = await add(
        engine,
        split,
        [NewStep(name="after", task_name="t", depends_on=["split"]), signal("gate", "open", "after")],
    )
    assert answer == ["after:pending", "gate:pending"]
    after = await worker.complete(workflow_id, "split")
    assert statuses(after) == {"split": "completed", "reduce": "enqueued", "after": "enqueued", "gate": "pending"}
    waiting = await worker.complete(workflow_id, "after")
    assert named(waiting, "gate").status is StepStatus.WAITING


async def test_a_repeat_by_the_same_adder_adds_nothing_twice(engine: Engine) -> None:
    workflow_id, worker, split = await split_running(engine)
    await add(engine, split, mapped(2))
    await worker.complete(workflow_id, "map_0")
    # After a crash the delivery runs again: the same steps, and one more.
    again = await add(engine, split, [*mapped(2), NewStep(name="x", task_name="t")])
    assert again == ["map_0:completed", "map_1:enqueued", "x:enqueued"]
    jobs = (await engine.list_jobs(T)).items
    assert sorted(job.workflow_step_id or "" for job in jobs) == ["map_0", "map_1", "split", "x"]


@pytest.mark.parametrize(
    "clash",
    [
        NewStep(name="map_0", task_name="other", required_by=["reduce"]),  # another definition
        NewStep(name="map_0", task_name="map", payload={"i": 0}),  # its required_by differs
        NewStep(name="reduce", task_name="do-reduce", depends_on=["split"]),  # declared at creation
    ],
)
async def test_any_other_clash_with_an_existing_name_is_a_conflict_and_adds_nothing(
    engine: Engine, clash: NewStep
) -> None:
    workflow_id, _, split = await split_running(engine)
    await add(engine, split, mapped(1))
    before = await engine.get_workflow(T, workflow_id)
    with pytest.raises(InvalidState):
        await add(engine, split, [NewStep(name="fresh", task_name="t"), clash])
    assert await engine.get_workflow(T, workflow_id) == before


async def test_a_step_added_by_another_step_is_a_clash(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("a"), step("b"), step("z", "a", "b")))
    worker = Worker(engine, T)
    a, b = await worker.job_of(workflow.id, "a"), await worker.job_of(workflow.id, "b")
    await add(engine, a, [NewStep(name="m", task_name="t")])
    with pytest.raises(InvalidState):
        await add(engine, b, [NewStep(name="m", task_name="t")])


async def test_required_by_must_name_a_pending_existing_step(engine: Engine) -> None:
    workflow_id, _worker, split = await split_running(engine)
    with pytest.raises(ValidationError) as unknown:
        await add(engine, split, [NewStep(name="m", task_name="t", required_by=["nope"])])
    assert [e.loc for e in unknown.value.errors] == [("steps", 0, "required_by", 0)]
    with pytest.raises(ValidationError):  # one of the same request: use its depends_on
        await add(
            engine,
            split,
            [NewStep(name="m", task_name="t", required_by=["n"]), NewStep(name="n", task_name="t")],
        )
    with pytest.raises(InvalidState):  # split is running: past pending
        await add(engine, split, [NewStep(name="m", task_name="t", required_by=["split"])])
    assert len((await engine.get_workflow(T, workflow_id)).steps) == 2


async def test_validation_as_at_creation(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("split"), step("reduce", "split"), signal("s", "go")))
    split = await Worker(engine, T).job_of(workflow.id, "split")
    bad = [
        [NewStep(name="m", task_name="t"), NewStep(name="m", task_name="t")],  # duplicate in the request
        [NewStep(name="m", task_name="t", depends_on=["ghost"])],  # unresolvable
        [NewStep(name="m", task_name="t", depends_on=["reduce"], required_by=["reduce"])],  # a cycle via old edges
        [signal("m", "go")],  # the signal name is taken
        [NewStep(name="m")],  # neither task_name nor wait
    ]
    for steps in bad:
        with pytest.raises(ValidationError):
            await add(engine, split, steps)
    assert len((await engine.get_workflow(T, workflow.id)).steps) == 3


async def test_the_size_limit_counts_the_steps_already_there(engine: Engine) -> None:
    big = dag(step("split"), *(step(f"s{i}", "split") for i in range(9_499)))
    workflow, _ = await engine.create_workflow(T, big)
    split = await Worker(engine, T).job_of(workflow.id, "split")
    with pytest.raises(ValidationError) as caught:
        await add(engine, split, [NewStep(name=f"m{i}", task_name="t") for i in range(501)])
    assert "at most 10000 steps" in str(caught.value)
    assert len(await add(engine, split, [NewStep(name=f"m{i}", task_name="t") for i in range(500)])) == 500


async def test_the_lease_rules_apply(engine: Engine) -> None:
    workflow_id, _worker, split = await split_running(engine)
    with pytest.raises(NotFound):
        await engine.add_steps("job_missing", "token", mapped(1))
    with pytest.raises(NotFound):  # a tenant-scoped worker key of another tenant
        await engine.add_steps(split.id, split.lease_token or "", mapped(1), scope="tenant-b")
    with pytest.raises(LeaseLost):
        await add(engine, replace(split, lease_token="00000000-0000-0000-0000-000000000000"), mapped(1))
    plain = (await engine.enqueue(T, NewJob(task_name="plain", queue_name="other"))).job
    (leased,) = await engine.lease(["other"])
    assert leased.id == plain.id
    with pytest.raises(InvalidState):
        await add(engine, leased, mapped(1))
    await engine.cancel_workflow(T, workflow_id)  # its running step jobs are cancelled: their leases are lost
    with pytest.raises(LeaseLost):
        await add(engine, split, mapped(1))
