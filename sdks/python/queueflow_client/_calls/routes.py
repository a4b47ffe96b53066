"""The API's routes that the client calls, each by its operationId in spec/openapi.json, and how a request of one
is built. Written by hand, as the rest of the client is (sdks/python/README.md says why):
tests/sdk/test_calls_match_spec.py holds every route, and the requests the calls build, to the spec."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

_NO_BODY: Any = object()


@dataclass(frozen=True, slots=True)
class Route:
    operation_id: str
    method: str
    path: str
    """A `{name}` for each path parameter, filled in the order `request` is given them."""
    parameters: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "parameters", tuple(re.findall(r"{(\w+)}", self.path)))

    def request(
        self,
        *path: str,
        query: Mapping[str, Any] | None = None,
        headers: Mapping[str, str | None] | None = None,
        body: Any = _NO_BODY,
    ) -> dict[str, Any]:
        """The arguments of `httpx.Client.request`: each path parameter quoted whole (a `/` in a name stays in
        it), a query parameter or a header given None left out, `body` sent as JSON."""
        values = {name: quote(str(value), safe="") for name, value in zip(self.parameters, path, strict=True)}
        request: dict[str, Any] = {"method": self.method, "url": self.path.format_map(values)}
        if query:
            request["params"] = {name: value for name, value in query.items() if value is not None}
        if headers:
            request["headers"] = {name: value for name, value in headers.items() if value is not None}
        if body is not _NO_BODY:
            request["json"] = body
        return request


LIST_JOBS = Route("listJobs", "GET", "/v1/jobs")
ENQUEUE_JOB = Route("enqueueJob", "POST", "/v1/jobs")
ENQUEUE_JOBS = Route("enqueueJobs", "POST", "/v1/jobs/batch")
GET_JOB = Route("getJob", "GET", "/v1/jobs/{job_id}")
CANCEL_JOB = Route("cancelJob", "POST", "/v1/jobs/{job_id}/cancel")
RETRY_JOB = Route("retryJob", "POST", "/v1/jobs/{job_id}/retry")
RESUME_SEQUENCE = Route("resumeSequence", "POST", "/v1/sequences/{key}/resume")

LIST_QUEUES = Route("listQueues", "GET", "/v1/queues")
GET_QUEUE = Route("getQueue", "GET", "/v1/queues/{name}")
UPDATE_QUEUE = Route("updateQueue", "PATCH", "/v1/queues/{name}")

LIST_SCHEDULES = Route("listSchedules", "GET", "/v1/schedules")
CREATE_SCHEDULE = Route("createSchedule", "POST", "/v1/schedules")
GET_SCHEDULE = Route("getSchedule", "GET", "/v1/schedules/{name}")
UPDATE_SCHEDULE = Route("updateSchedule", "PATCH", "/v1/schedules/{name}")
DELETE_SCHEDULE = Route("deleteSchedule", "DELETE", "/v1/schedules/{name}")
LIST_TRIGGERS = Route("listTriggers", "GET", "/v1/triggers")
CREATE_TRIGGER = Route("createTrigger", "POST", "/v1/triggers")
GET_TRIGGER = Route("getTrigger", "GET", "/v1/triggers/{name}")
UPDATE_TRIGGER = Route("updateTrigger", "PATCH", "/v1/triggers/{name}")
DELETE_TRIGGER = Route("deleteTrigger", "DELETE", "/v1/triggers/{name}")
SEND_EVENT = Route("sendEvent", "POST", "/v1/events")

LIST_ENDPOINTS = Route("listEndpoints", "GET", "/v1/endpoints")
CREATE_ENDPOINT = Route("createEndpoint", "POST", "/v1/endpoints")
GET_ENDPOINT = Route("getEndpoint", "GET", "/v1/endpoints/{name}")
UPDATE_ENDPOINT = Route("updateEndpoint", "PATCH", "/v1/endpoints/{name}")
ROTATE_ENDPOINT_SECRET = Route("rotateEndpointSecret", "POST", "/v1/endpoints/{name}/rotate-secret")
DELETE_ENDPOINT = Route("deleteEndpoint", "DELETE", "/v1/endpoints/{name}")

LIST_WORKFLOWS = Route("listWorkflows", "GET", "/v1/workflows")
CREATE_WORKFLOW = Route("createWorkflow", "POST", "/v1/workflows")
GET_WORKFLOW = Route("getWorkflow", "GET", "/v1/workflows/{workflow_id}")
CANCEL_WORKFLOW = Route("cancelWorkflow", "POST", "/v1/workflows/{workflow_id}/cancel")
RETRY_WORKFLOW = Route("retryWorkflow", "POST", "/v1/workflows/{workflow_id}/retry")
SIGNAL_WORKFLOW = Route("signalWorkflow", "POST", "/v1/workflows/{workflow_id}/signals/{name}")

LEASE_JOBS = Route("leaseJobs", "POST", "/v1/worker/lease")
HEARTBEAT_JOBS = Route("heartbeatJobs", "POST", "/v1/worker/heartbeat")
ACK_JOBS = Route("ackJobs", "POST", "/v1/worker/ack")
RELEASE_JOBS = Route("releaseJobs", "POST", "/v1/worker/release")
HEARTBEAT_JOB = Route("heartbeatJob", "POST", "/v1/worker/jobs/{job_id}/heartbeat")
COMPLETE_JOB = Route("completeJob", "POST", "/v1/worker/jobs/{job_id}/complete")
FAIL_JOB = Route("failJob", "POST", "/v1/worker/jobs/{job_id}/fail")
ADD_WORKFLOW_STEPS = Route("addWorkflowSteps", "POST", "/v1/worker/jobs/{job_id}/steps")
