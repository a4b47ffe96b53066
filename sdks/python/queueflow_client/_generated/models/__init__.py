"""Contains all the data models used in inputs/outputs"""

from .ack_complete import AckComplete
from .ack_fail import AckFail
from .ack_request import AckRequest
from .ack_result import AckResult
from .ack_result_outcome import AckResultOutcome
from .ack_result_status_type_1 import AckResultStatusType1
from .ack_result_status_type_2_type_1 import AckResultStatusType2Type1
from .ack_result_status_type_3_type_1 import AckResultStatusType3Type1
from .ack_results import AckResults
from .add_steps_request import AddStepsRequest
from .added_step import AddedStep
from .added_step_on_failure import AddedStepOnFailure
from .added_step_payload import AddedStepPayload
from .added_steps import AddedSteps
from .backoff import Backoff
from .backoff_strategy import BackoffStrategy
from .batch_item import BatchItem
from .batch_item_metadata import BatchItemMetadata
from .batch_item_payload import BatchItemPayload
from .complete_request import CompleteRequest
from .create_schedule import CreateSchedule
from .create_schedule_payload import CreateSchedulePayload
from .create_workflow import CreateWorkflow
from .create_workflow_context import CreateWorkflowContext
from .enqueue_batch import EnqueueBatch
from .enqueue_job import EnqueueJob
from .enqueue_job_metadata import EnqueueJobMetadata
from .enqueue_job_payload import EnqueueJobPayload
from .fail_request import FailRequest
from .field_problem import FieldProblem
from .health import Health
from .health_status import HealthStatus
from .heartbeat import Heartbeat
from .heartbeat_batch import HeartbeatBatch
from .heartbeat_item import HeartbeatItem
from .heartbeat_request import HeartbeatRequest
from .heartbeat_result import HeartbeatResult
from .heartbeat_result_outcome import HeartbeatResultOutcome
from .heartbeat_results import HeartbeatResults
from .job import Job
from .job_batch import JobBatch
from .job_metadata import JobMetadata
from .job_page import JobPage
from .job_payload import JobPayload
from .job_status import JobStatus
from .lease_request import LeaseRequest
from .leased_job import LeasedJob
from .leased_job_metadata import LeasedJobMetadata
from .leased_job_payload import LeasedJobPayload
from .leased_job_status import LeasedJobStatus
from .leased_jobs import LeasedJobs
from .list_jobs_status_type_1 import ListJobsStatusType1
from .list_jobs_status_type_2_type_1 import ListJobsStatusType2Type1
from .list_jobs_status_type_3_type_1 import ListJobsStatusType3Type1
from .list_workflows_status_type_1 import ListWorkflowsStatusType1
from .list_workflows_status_type_2_type_1 import ListWorkflowsStatusType2Type1
from .list_workflows_status_type_3_type_1 import ListWorkflowsStatusType3Type1
from .new_workflow_step import NewWorkflowStep
from .new_workflow_step_on_failure import NewWorkflowStepOnFailure
from .new_workflow_step_payload import NewWorkflowStepPayload
from .problem import Problem
from .problem_code import ProblemCode
from .queue import Queue
from .queue_list import QueueList
from .rate_limit import RateLimit
from .release_item import ReleaseItem
from .release_request import ReleaseRequest
from .release_results import ReleaseResults
from .schedule import Schedule
from .schedule_page import SchedulePage
from .schedule_payload_type_0 import SchedulePayloadType0
from .schedule_workflow_type_0 import ScheduleWorkflowType0
from .signal_request import SignalRequest
from .trace_context import TraceContext
from .update_queue import UpdateQueue
from .update_schedule import UpdateSchedule
from .update_schedule_payload import UpdateSchedulePayload
from .wait_spec import WaitSpec
from .workflow import Workflow
from .workflow_context import WorkflowContext
from .workflow_page import WorkflowPage
from .workflow_status import WorkflowStatus
from .workflow_step import WorkflowStep
from .workflow_step_on_failure import WorkflowStepOnFailure
from .workflow_step_status import WorkflowStepStatus

__all__ = (
    "AckComplete",
    "AckFail",
    "AckRequest",
    "AckResult",
    "AckResultOutcome",
    "AckResultStatusType1",
    "AckResultStatusType2Type1",
    "AckResultStatusType3Type1",
    "AckResults",
    "AddStepsRequest",
    "AddedStep",
    "AddedStepOnFailure",
    "AddedStepPayload",
    "AddedSteps",
    "Backoff",
    "BackoffStrategy",
    "BatchItem",
    "BatchItemMetadata",
    "BatchItemPayload",
    "CompleteRequest",
    "CreateSchedule",
    "CreateSchedulePayload",
    "CreateWorkflow",
    "CreateWorkflowContext",
    "EnqueueBatch",
    "EnqueueJob",
    "EnqueueJobMetadata",
    "EnqueueJobPayload",
    "FailRequest",
    "FieldProblem",
    "Health",
    "HealthStatus",
    "Heartbeat",
    "HeartbeatBatch",
    "HeartbeatItem",
    "HeartbeatRequest",
    "HeartbeatResult",
    "HeartbeatResultOutcome",
    "HeartbeatResults",
    "Job",
    "JobBatch",
    "JobMetadata",
    "JobPage",
    "JobPayload",
    "JobStatus",
    "LeaseRequest",
    "LeasedJob",
    "LeasedJobMetadata",
    "LeasedJobPayload",
    "LeasedJobStatus",
    "LeasedJobs",
    "ListJobsStatusType1",
    "ListJobsStatusType2Type1",
    "ListJobsStatusType3Type1",
    "ListWorkflowsStatusType1",
    "ListWorkflowsStatusType2Type1",
    "ListWorkflowsStatusType3Type1",
    "NewWorkflowStep",
    "NewWorkflowStepOnFailure",
    "NewWorkflowStepPayload",
    "Problem",
    "ProblemCode",
    "Queue",
    "QueueList",
    "RateLimit",
    "ReleaseItem",
    "ReleaseRequest",
    "ReleaseResults",
    "Schedule",
    "SchedulePage",
    "SchedulePayloadType0",
    "ScheduleWorkflowType0",
    "SignalRequest",
    "TraceContext",
    "UpdateQueue",
    "UpdateSchedule",
    "UpdateSchedulePayload",
    "WaitSpec",
    "Workflow",
    "WorkflowContext",
    "WorkflowPage",
    "WorkflowStatus",
    "WorkflowStep",
    "WorkflowStepOnFailure",
    "WorkflowStepStatus",
)
