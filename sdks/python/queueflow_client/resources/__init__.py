"""The client's resources, one module each, its sync and async class side by side: `client.jobs`,
`client.queues`, `client.workflows`, `client.schedules`, `client.endpoints`, `client.triggers`, `client.events`,
`client.sequences`.
`QueueFlow` and `AsyncQueueFlow` only wire them to a transport."""

from queueflow_client.resources.endpoints import AsyncEndpoints, Endpoints
from queueflow_client.resources.jobs import AsyncJobs, JobFilters, Jobs
from queueflow_client.resources.queues import AsyncQueues, Queues, QueueSettings
from queueflow_client.resources.schedules import AsyncSchedules, ScheduleChanges, ScheduleOptions, Schedules
from queueflow_client.resources.sequences import AsyncSequences, Sequences
from queueflow_client.resources.triggers import (
    AsyncEvents,
    AsyncTriggers,
    Events,
    TriggerChanges,
    TriggeredWorkflow,
    Triggers,
)
from queueflow_client.resources.workflows import AsyncWorkflows, Workflows

__all__ = [
    "AsyncEndpoints",
    "AsyncEvents",
    "AsyncJobs",
    "AsyncQueues",
    "AsyncSchedules",
    "AsyncSequences",
    "AsyncTriggers",
    "AsyncWorkflows",
    "Endpoints",
    "Events",
    "JobFilters",
    "Jobs",
    "QueueSettings",
    "Queues",
    "ScheduleChanges",
    "ScheduleOptions",
    "Schedules",
    "Sequences",
    "TriggerChanges",
    "TriggeredWorkflow",
    "Triggers",
    "Workflows",
]
