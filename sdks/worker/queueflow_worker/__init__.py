"""What runs a QueueFlow task, shared by the SDK's `Worker` (jobs over HTTP) and the server's in-process runner
(jobs from its engine): the task's `JobContext`, a delivery's `Outcome`, and the `WorkerLoop` over a
`LeaseSource` and a `TaskRunner`. It imports neither of them: tasks are written with `queueflow_client`'s
`TaskRegistry`, which is a `TaskRunner`.
"""

from queueflow_worker.context import (
    AddedStep,
    Delivery,
    Fatal,
    JobContext,
    Lease,
    Retry,
    TaskFunction,
    invoke,
    step_json,
)
from queueflow_worker.loop import WorkerLoop
from queueflow_worker.outcomes import MAX_ERROR_CHARS, Outcome, answers_in_order, error_text
from queueflow_worker.ports import Clock, LeasedDelivery, LeaseSource, TaskRunner
from queueflow_worker.timing import EventLoopClock

__version__ = "0.2.0"

__all__ = [
    "MAX_ERROR_CHARS",
    "AddedStep",
    "Clock",
    "Delivery",
    "EventLoopClock",
    "Fatal",
    "JobContext",
    "Lease",
    "LeaseSource",
    "LeasedDelivery",
    "Outcome",
    "Retry",
    "TaskFunction",
    "TaskRunner",
    "WorkerLoop",
    "answers_in_order",
    "error_text",
    "invoke",
    "step_json",
]
