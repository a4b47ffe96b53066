"""Tenant routes for jobs and queues: each handler turns wire shapes into one engine call and back."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, Response, get, patch, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import HeaderParameter, JSONBody, QueryParameter
from msgspec.structs import replace

from queueflow.api.allow import options_for
from queueflow.api.auth import TENANT, tenant_of
from queueflow.api.body import StrictBody
from queueflow.api.problems import problem_responses
from queueflow.api.schemas.common import ID_PATTERN, NO_NUL, JobIdPath, JobStatusName
from queueflow.api.schemas.jobs import EnqueueBatch, EnqueueJob, Job, JobBatch, JobPage
from queueflow.api.schemas.queues import Queue, QueueList, QueueNamePath, UpdateQueue
from queueflow.api.services import services_of
from queueflow.api.tracing import TraceparentHeader, TracestateHeader, request_trace_context
from queueflow.api.waiting import job_when_finished
from queueflow.core.errors import FieldError, ValidationError
from queueflow.core.types import JobFilter, JobStatus
from queueflow.core.validation import NAME_PATTERN
from queueflow.engine import MAX_PAGE

TENANT_ERRORS = (401, 403, 503)
UNIQUE_HEADER = "QueueFlow-Unique"
"""On a 200 from a `unique` rule: `skipped` (the existing job, unchanged) or `replaced` (rewritten)."""
WaitSeconds = Annotated[
    float,
    QueryParameter(
        ge=0,
        le=60,
        description="Wait up to this long for the object to finish, and answer as soon as it does (0: at once).",
    ),
]
IdempotencyKeyHeader = Annotated[
    str | None,
    HeaderParameter(
        name="Idempotency-Key",
        min_length=1,
        max_length=255,
        description="Scoped to the tenant: a repeat answers 200 with the original object, unchanged.",
    ),
]


jobs_options = options_for("/jobs", "GET", "POST")  # registered before JobsController
queue_options = options_for("/queues/{name:str}", "GET", "PATCH")  # registered before QueuesController


class JobsController(Controller):
    path = "/jobs"
    tags = ("jobs",)
    opt = TENANT

    @post(
        "/",
        operation_id="enqueueJob",
        dto=StrictBody[EnqueueJob],
        return_dto=None,
        status_code=201,
        responses={
            200: ResponseSpec(
                Job,
                description="An idempotent repeat: the original job, unchanged; or the job a `unique` rule met,"
                " with the header `QueueFlow-Unique: skipped` (unchanged) or `replaced` (rewritten)",
            ),
            **problem_responses(400, *TENANT_ERRORS, 409, 413),
        },
    )
    async def enqueue_job(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[EnqueueJob],
        idempotency_key: IdempotencyKeyHeader = None,
        traceparent: TraceparentHeader = None,
        tracestate: TracestateHeader = None,
    ) -> Response[Job]:
        """Enqueue a job."""
        services = services_of(request)
        new = data.to_domain(idempotency_key)
        if (traced := request_trace_context(traceparent, tracestate)) is not None:
            new = replace(new, trace_context=traced)
        enqueued = await services.engine.enqueue(tenant_of(request), new)
        if enqueued.created:
            services.metrics.jobs_enqueued([enqueued.job])
        headers = None
        if enqueued.unique is not None:
            services.metrics.jobs_unique([enqueued])
            headers = {UNIQUE_HEADER: enqueued.unique.value}
        return Response(Job.from_domain(enqueued.job), status_code=201 if enqueued.created else 200, headers=headers)

    @post(
        "/batch",
        operation_id="enqueueJobs",
        dto=StrictBody[EnqueueBatch],
        return_dto=None,
        status_code=201,
        responses=problem_responses(400, *TENANT_ERRORS, 409, 413),
    )
    async def enqueue_jobs(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[EnqueueBatch],
        traceparent: TraceparentHeader = None,
        tracestate: TracestateHeader = None,
    ) -> JobBatch:
        """Enqueue up to 1000 jobs atomically (all or none)."""
        services = services_of(request)
        jobs = [item.to_domain(item.idempotency_key) for item in data.jobs]
        if (traced := request_trace_context(traceparent, tracestate)) is not None:
            jobs = [replace(job, trace_context=traced) for job in jobs]
        results = await services.engine.enqueue_many(tenant_of(request), jobs)
        services.metrics.jobs_enqueued(result.job for result in results if result.created)
        services.metrics.jobs_unique(result for result in results if result.unique is not None)
        return JobBatch([Job.from_domain(result.job) for result in results])

    @get("/", operation_id="listJobs", responses=problem_responses(400, *TENANT_ERRORS))
    async def list_jobs(
        self,
        request: Request[Any, Any, Any],
        queue_name: Annotated[str | None, QueryParameter(pattern=NAME_PATTERN.pattern, max_length=100)] = None,
        status: Annotated[JobStatusName | None, QueryParameter()] = None,
        task_name: Annotated[str | None, QueryParameter(min_length=1, max_length=200, pattern=NO_NUL)] = None,
        workflow_id: Annotated[str | None, QueryParameter(pattern=ID_PATTERN, max_length=64)] = None,
        unique_key: Annotated[
            str | None, QueryParameter(min_length=1, max_length=255, pattern=NO_NUL, description="A unique rule's key")
        ] = None,
        sequence_key: Annotated[
            str | None, QueryParameter(min_length=1, max_length=255, pattern=NO_NUL, description="A sequence's key")
        ] = None,
        metadata: Annotated[
            str | None,
            QueryParameter(
                description="A JSON object: only jobs whose metadata contains it", max_length=8192, pattern=NO_NUL
            ),
        ] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=MAX_PAGE)] = 50,
        cursor: Annotated[str | None, QueryParameter(min_length=1, max_length=512)] = None,
    ) -> JobPage:
        """List the tenant's jobs, newest first."""
        services = services_of(request)
        where = JobFilter(
            queue_name=queue_name,
            status=JobStatus(status) if status is not None else None,
            task_name=task_name,
            workflow_id=workflow_id,
            unique_key=unique_key,
            sequence_key=sequence_key,
            metadata=_json_object(metadata, "metadata") if metadata is not None else None,
        )
        page = await services.engine.list_jobs(tenant_of(request), where, limit=limit, cursor=cursor)
        return JobPage([Job.from_domain(job) for job in page.items], page.next_cursor)

    @get("/{job_id:str}", operation_id="getJob", responses=problem_responses(400, *TENANT_ERRORS, 404))
    async def get_job(
        self,
        request: Request[Any, Any, Any],
        job_id: JobIdPath,
        wait_seconds: WaitSeconds = 0,
    ) -> Job:
        """Get one job; with `wait_seconds`, once it has finished (or as it is when the time runs out)."""
        services = services_of(request)
        engine, wakeups, settings = services.engine, services.wakeups, services.settings
        return Job.from_domain(
            await job_when_finished(engine, wakeups, settings, tenant_of(request), job_id, wait_seconds)
        )

    @post(
        "/{job_id:str}/cancel",
        operation_id="cancelJob",
        status_code=200,
        responses=problem_responses(400, *TENANT_ERRORS, 404, 409),
    )
    async def cancel_job(self, request: Request[Any, Any, Any], job_id: JobIdPath) -> Job:
        """Cancel a pending, retrying or running job (a running job's lease stops working)."""
        services = services_of(request)
        return Job.from_domain(await services.engine.cancel_job(tenant_of(request), job_id))

    @post(
        "/{job_id:str}/retry",
        operation_id="retryJob",
        status_code=200,
        responses=problem_responses(400, *TENANT_ERRORS, 404, 409),
    )
    async def retry_job(self, request: Request[Any, Any, Any], job_id: JobIdPath) -> Job:
        """Replay a dead-lettered or cancelled job now, with its retry count reset."""
        services = services_of(request)
        return Job.from_domain(await services.engine.retry_job(tenant_of(request), job_id))


class QueuesController(Controller):
    path = "/queues"
    tags = ("jobs",)
    opt = TENANT

    @get("/", operation_id="listQueues", responses=problem_responses(*TENANT_ERRORS))
    async def list_queues(self, request: Request[Any, Any, Any]) -> QueueList:
        """Count the tenant's jobs per queue and state, with each queue's flow-control and retention settings."""
        services = services_of(request)
        return QueueList([Queue.from_domain(stats) for stats in await services.engine.queue_stats(tenant_of(request))])

    @get("/{name:str}", operation_id="getQueue", responses=problem_responses(400, *TENANT_ERRORS, 404))
    async def get_queue(self, request: Request[Any, Any, Any], name: QueueNamePath) -> Queue:
        """Get one queue's counts and its flow-control and retention settings."""
        services = services_of(request)
        return Queue.from_domain(await services.engine.get_queue(tenant_of(request), name))

    @patch(
        "/{name:str}",
        operation_id="updateQueue",
        dto=StrictBody[UpdateQueue],
        return_dto=None,
        responses=problem_responses(400, *TENANT_ERRORS, 413),
    )
    async def update_queue(
        self,
        request: Request[Any, Any, Any],
        name: QueueNamePath,
        data: JSONBody[UpdateQueue],
    ) -> Queue:
        """Pause or resume a queue, or change its limits or retention (a queue with no jobs yet too)."""
        services = services_of(request)
        return Queue.from_domain(await services.engine.configure_queue(tenant_of(request), name, data.to_domain()))


def _json_object(raw: str, name: str) -> dict[str, Any]:
    try:
        value = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        value = None
    if not isinstance(value, dict):
        raise ValidationError.of([FieldError((name,), "must be a JSON object")])
    return value
