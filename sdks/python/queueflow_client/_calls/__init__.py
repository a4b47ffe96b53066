"""Every API call the client makes, described once (request + how to read the answer) for the sync and the
async client alike, a module per resource as the client's `resources/` are; each is here by name too
(`_calls.enqueue`, `_calls.lease`). Optional arguments left at None are not sent, so the server's defaults apply."""

from queueflow_client._calls.arguments import new_idempotency_key
from queueflow_client._calls.endpoints import (
    create_endpoint,
    delete_endpoint,
    get_endpoint,
    list_endpoints,
    rotate_endpoint_secret,
    update_endpoint,
)
from queueflow_client._calls.jobs import cancel, enqueue, enqueue_many, get, list_page, resume_sequence, retry
from queueflow_client._calls.queues import get_queue, queues, update_queue
from queueflow_client._calls.schedules import (
    create_schedule,
    delete_schedule,
    get_schedule,
    list_schedules,
    update_schedule,
)
from queueflow_client._calls.triggers import (
    create_trigger,
    delete_trigger,
    get_trigger,
    list_triggers,
    send_event,
    update_trigger,
)
from queueflow_client._calls.worker import (
    MAX_ADDED_STEPS,
    ack_outcomes,
    add_steps,
    complete,
    fail,
    heartbeat,
    heartbeat_many,
    lease,
    release,
)
from queueflow_client._calls.workflows import (
    STEP_OPTIONS,
    cancel_workflow,
    create_workflow,
    get_workflow,
    list_workflows,
    retry_workflow,
    signal_workflow,
)

__all__ = [
    "MAX_ADDED_STEPS",
    "STEP_OPTIONS",
    "ack_outcomes",
    "add_steps",
    "cancel",
    "cancel_workflow",
    "complete",
    "create_endpoint",
    "create_schedule",
    "create_trigger",
    "create_workflow",
    "delete_endpoint",
    "delete_schedule",
    "delete_trigger",
    "enqueue",
    "enqueue_many",
    "fail",
    "get",
    "get_endpoint",
    "get_queue",
    "get_schedule",
    "get_trigger",
    "get_workflow",
    "heartbeat",
    "heartbeat_many",
    "lease",
    "list_endpoints",
    "list_page",
    "list_schedules",
    "list_triggers",
    "list_workflows",
    "new_idempotency_key",
    "queues",
    "release",
    "resume_sequence",
    "retry",
    "retry_workflow",
    "rotate_endpoint_secret",
    "send_event",
    "signal_workflow",
    "update_endpoint",
    "update_queue",
    "update_schedule",
    "update_trigger",
]
