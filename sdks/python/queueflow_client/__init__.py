"""QueueFlow's Python client (`QueueFlow`, `AsyncQueueFlow`) and task worker (`TaskRegistry`, `Worker`).

    from queueflow_client import QueueFlow
    client = QueueFlow("http://127.0.0.1:8000")
    client.jobs.enqueue("send_email", payload={"to": "ada@example.com"})

Workflows are written with `queueflow_client.steps` (`steps.task`, `steps.signal`, `steps.sleep`, `steps.workflow`).

Its methods live by resource in `queueflow_client.resources`; the task context and worker loop it shares with
the server's in-process runner, in the `queueflow_worker` package. Its requests are built in `queueflow_client._calls`
(a route per operation of the server's OpenAPI document) and its answers read into `queueflow_client.types`, all
written by hand and checked against the document by tests (sdks/python/README.md, "Development").
"""

from queueflow_client import steps
from queueflow_client._version import __version__ as __version__
from queueflow_client.client import AsyncQueueFlow, QueueFlow
from queueflow_client.errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    ArgumentError,
    AuthenticationError,
    ConflictError,
    DuplicateError,
    InvalidStateError,
    LeaseLostError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    QueueFlowError,
    SignatureVerificationError,
    UnavailableError,
    ValidationError,
)
from queueflow_client.local import LocalLease
from queueflow_client.options import EnqueueOptions, JobOptions
from queueflow_client.signatures import verify_signature
from queueflow_client.steps import WorkflowDefinition
from queueflow_client.tasks import Fatal, JobContext, Retry, TaskRegistry
from queueflow_client.types import (
    UNCHANGED,
    Backoff,
    Endpoint,
    EventAccepted,
    Job,
    LeasedJob,
    Page,
    Queue,
    RateLimit,
    Schedule,
    Sequence,
    SequenceResumed,
    Started,
    Step,
    TraceContext,
    Trigger,
    Unique,
    Wait,
    Workflow,
    WorkflowStep,
)
from queueflow_client.worker import Worker

__all__ = [
    "UNCHANGED",
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "ArgumentError",
    "AsyncQueueFlow",
    "AuthenticationError",
    "Backoff",
    "ConflictError",
    "DuplicateError",
    "Endpoint",
    "EnqueueOptions",
    "EventAccepted",
    "Fatal",
    "InvalidStateError",
    "Job",
    "JobContext",
    "JobOptions",
    "LeaseLostError",
    "LeasedJob",
    "LocalLease",
    "NotFoundError",
    "Page",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "Queue",
    "QueueFlow",
    "QueueFlowError",
    "RateLimit",
    "Retry",
    "Schedule",
    "Sequence",
    "SequenceResumed",
    "SignatureVerificationError",
    "Started",
    "Step",
    "TaskRegistry",
    "TraceContext",
    "Trigger",
    "UnavailableError",
    "Unique",
    "ValidationError",
    "Wait",
    "Worker",
    "Workflow",
    "WorkflowDefinition",
    "WorkflowStep",
    "steps",
    "verify_signature",
]
