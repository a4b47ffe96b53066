"""Tenant routes for workflows: create (validating the DAG), get, list, cancel, signal and retry, each one engine
call."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import JSONBody, PathParameter, QueryParameter

from queueflow.api.allow import options_for
from queueflow.api.auth import TENANT, tenant_of
from queueflow.api.body import OptionalStrictBody, StrictBody
from queueflow.api.jobs import TENANT_ERRORS, IdempotencyKeyHeader, WaitSeconds
from queueflow.api.problems import problem_responses
from queueflow.api.schemas.common import JobIdPath
from queueflow.api.schemas.workflows import CreateWorkflow, SignalRequest, Workflow, WorkflowPage, WorkflowStatusName
from queueflow.api.services import services_of
from queueflow.api.tracing import TraceparentHeader, TracestateHeader, request_trace_context
from queueflow.api.waiting import workflow_when_finished
from queueflow.core.workflow import StepStatus, WorkflowStatus
from queueflow.engine import MAX_PAGE

WorkflowIdPath = JobIdPath  # every id has the same shape: a type prefix and 26 base32 characters
SignalNamePath = Annotated[str, PathParameter(pattern=r"^[A-Za-z0-9_.:-]{1,100}$", min_length=1, max_length=100)]
workflows_options = options_for("/workflows", "GET", "POST")  # registered before WorkflowsController


class WorkflowsController(Controller):
    path = "/workflows"
    tags = ("workflows",)
    opt = TENANT

    @post(
        "/",
        operation_id="createWorkflow",
        dto=StrictBody[CreateWorkflow],
        return_dto=None,
        status_code=201,
        responses={
            200: ResponseSpec(Workflow, description="An idempotent repeat: the original workflow, unchanged"),
            **problem_responses(400, *TENANT_ERRORS, 413),
        },
    )
    async def create_workflow(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[CreateWorkflow],
        idempotency_key: IdempotencyKeyHeader = None,
        traceparent: TraceparentHeader = None,
        tracestate: TracestateHeader = None,
    ) -> Response[Workflow]:
        """Create a workflow from a DAG of steps and enqueue its root steps."""
        services = services_of(request)
        new = data.to_domain(idempotency_key)
        if (traced := request_trace_context(traceparent, tracestate)) is not None:
            new = replace(new, trace_context=traced)
        workflow, created = await services.engine.create_workflow(tenant_of(request), new)
        if created:
            services.metrics.jobs_enqueued(step for step in workflow.steps if step.status is StepStatus.ENQUEUED)
        return Response(Workflow.from_domain(workflow), status_code=201 if created else 200)

    @get("/", operation_id="listWorkflows", responses=problem_responses(400, *TENANT_ERRORS))
    async def list_workflows(
        self,
        request: Request[Any, Any, Any],
        status: Annotated[WorkflowStatusName | None, QueryParameter()] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=MAX_PAGE)] = 50,
        cursor: Annotated[str | None, QueryParameter(min_length=1, max_length=512)] = None,
        parent_id: Annotated[str | None, QueryParameter(min_length=1, max_length=100)] = None,
    ) -> WorkflowPage:
        """List the tenant's workflows, newest first; with `parent_id`, only that workflow's children."""
        services = services_of(request)
        where = WorkflowStatus(status) if status is not None else None
        page = await services.engine.list_workflows(
            tenant_of(request), where, limit=limit, cursor=cursor, parent_id=parent_id
        )
        return WorkflowPage([Workflow.from_domain(workflow) for workflow in page.items], page.next_cursor)

    @get("/{workflow_id:str}", operation_id="getWorkflow", responses=problem_responses(400, *TENANT_ERRORS, 404))
    async def get_workflow(
        self,
        request: Request[Any, Any, Any],
        workflow_id: WorkflowIdPath,
        wait_seconds: WaitSeconds = 0,
    ) -> Workflow:
        """Get one workflow with the status of each of its steps; with `wait_seconds`, once it is no longer running."""
        services = services_of(request)
        workflow = await workflow_when_finished(
            services.engine, services.wakeups, services.settings, tenant_of(request), workflow_id, wait_seconds
        )
        return Workflow.from_domain(workflow)

    @post(
        "/{workflow_id:str}/cancel",
        operation_id="cancelWorkflow",
        status_code=200,
        responses=problem_responses(400, *TENANT_ERRORS, 404, 409),
    )
    async def cancel_workflow(self, request: Request[Any, Any, Any], workflow_id: WorkflowIdPath) -> Workflow:
        """Cancel a running workflow: every unfinished step, and its job (a running job's lease stops working)."""
        services = services_of(request)
        return Workflow.from_domain(await services.engine.cancel_workflow(tenant_of(request), workflow_id))

    @post(
        "/{workflow_id:str}/signals/{name:str}",
        operation_id="signalWorkflow",
        dto=OptionalStrictBody[SignalRequest],
        return_dto=None,
        status_code=200,
        responses=problem_responses(400, *TENANT_ERRORS, 404, 409, 413),
    )
    async def signal_workflow(
        self,
        request: Request[Any, Any, Any],
        workflow_id: WorkflowIdPath,
        name: SignalNamePath,
        data: JSONBody[SignalRequest | None] = None,
    ) -> Workflow:
        """Send the signal `name`: the step waiting for it completes now with `payload` as its result (and the
        workflow advances), or, if it does not wait yet, keeps it for when it does."""
        services = services_of(request)
        payload = None if data is None else data.payload
        signalled = await services.engine.signal_workflow(tenant_of(request), workflow_id, name, payload)
        return Workflow.from_domain(signalled)

    @post(
        "/{workflow_id:str}/retry",
        operation_id="retryWorkflow",
        status_code=200,
        responses=problem_responses(400, *TENANT_ERRORS, 404, 409),
    )
    async def retry_workflow(self, request: Request[Any, Any, Any], workflow_id: WorkflowIdPath) -> Workflow:
        """Re-run a failed, partially failed or cancelled workflow: its failed, cancelled and skipped steps run
        again; completed steps keep their results."""
        services = services_of(request)
        return Workflow.from_domain(await services.engine.retry_workflow(tenant_of(request), workflow_id))
