"""`job_watch` and `workflow_watch` on every store: the object as it is, for its tenant only, whatever its status.

That the finish is then announced is each store's own business (the in-memory store calls its signal, PostgreSQL
NOTIFYs): tests/api/test_wait.py and tests/postgres/test_wait_notify.py cover it.
"""

from __future__ import annotations

import pytest
from queueflow.core.types import JobStatus
from queueflow.core.workflow import NewStep
from queueflow.ports import Store

from tests.store_contract.store_rows import OTHER, in_status, stored_workflow


@pytest.mark.parametrize("status", list(JobStatus))
async def test_job_watch_reads_the_job_for_its_tenant_only(store: Store, status: JobStatus) -> None:
    job = await in_status(store, status)
    assert await store.job_watch(job.id, tenant_id=job.tenant_id) == await store.job_get(job.id)
    assert await store.job_watch(job.id, tenant_id=OTHER) is None
    assert await store.job_watch(f"{job.id}_missing", tenant_id=job.tenant_id) is None
    assert await store.job_watch(f"{job.id}\x00", tenant_id=job.tenant_id) is None
    # Watching changes nothing a reader can see, however often it is asked.
    assert await store.job_watch(job.id, tenant_id=job.tenant_id) == job


async def test_workflow_watch_reads_the_workflow_for_its_tenant_only(store: Store) -> None:
    workflow = await stored_workflow(store, NewStep(name="a", task_name="a"))
    assert await store.workflow_watch(workflow.id, tenant_id=workflow.tenant_id) == workflow
    assert await store.workflow_watch(workflow.id, tenant_id=OTHER) is None
    assert await store.workflow_watch(f"{workflow.id}_missing", tenant_id=workflow.tenant_id) is None
    assert await store.workflow_watch(workflow.id, tenant_id=workflow.tenant_id) == workflow
