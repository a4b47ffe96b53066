"""The wire shapes of cron schedules, addressed by name."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from litestar.params import PathParameter
from msgspec import UNSET, Meta, Struct, UnsetType

from queueflow.api.schemas.common import NO_NUL, JSONObject, MaxRetries, Priority, QueueName, RequestBody, TaskName
from queueflow.api.schemas.workflows import CreateWorkflow
from queueflow.core import schedule as schedules
from queueflow.core import validation
from queueflow.core.definitions import new_workflow_json

ScheduleName = Annotated[str, Meta(pattern=validation.NAME_PATTERN.pattern, min_length=1, max_length=100)]
ScheduleNamePath = Annotated[str, PathParameter(pattern=validation.NAME_PATTERN.pattern, min_length=1, max_length=100)]
# Cron and time-zone validity are checked by `core.schedule` (its messages say what is wrong); the spec can
# only bound their length and give examples.
Cron = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=schedules.MAX_CRON_LENGTH,
        pattern=NO_NUL,
        description="Five fields (minute hour day-of-month month day-of-week) or an alias such as @daily",
        examples=["0 3 * * *", "*/15 * * * MON-FRI", "@hourly"],
    ),
]
TimeZone = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=255,
        pattern=NO_NUL,
        description="An IANA time zone name; occurrences follow it across DST changes",
        examples=["UTC", "Europe/Berlin"],
    ),
]


class CreateSchedule(RequestBody):
    """A schedule that enqueues a job (`task_name`, with `queue_name` "default", `payload` {}, `priority` 0 and
    `max_retries` 3 unless given) or starts a workflow (`workflow`, as the body of POST /v1/workflows, with none
    of the job's fields): exactly one of `task_name` and `workflow`."""

    name: ScheduleName
    cron: Cron
    task_name: TaskName | UnsetType = UNSET
    workflow: CreateWorkflow | UnsetType = UNSET
    timezone: TimeZone = "UTC"
    queue_name: QueueName | UnsetType = UNSET
    payload: JSONObject | UnsetType = UNSET
    priority: Priority | UnsetType = UNSET
    max_retries: MaxRetries | UnsetType = UNSET
    enabled: bool = True

    def to_domain(self) -> schedules.NewSchedule:
        fields = {name: getattr(self, name) for name in self.__struct_fields__}
        if isinstance(self.workflow, CreateWorkflow):
            fields["workflow"] = self.workflow.to_domain(None)
        return schedules.NewSchedule(**{name: value for name, value in fields.items() if value is not UNSET})


class UpdateSchedule(RequestBody):
    """A PATCH: an absent field stays as it is; `null` is not a value any of them can take."""

    cron: Cron | UnsetType = UNSET
    timezone: TimeZone | UnsetType = UNSET
    task_name: TaskName | UnsetType = UNSET
    queue_name: QueueName | UnsetType = UNSET
    payload: JSONObject | UnsetType = UNSET
    priority: Priority | UnsetType = UNSET
    max_retries: MaxRetries | UnsetType = UNSET
    enabled: bool | UnsetType = UNSET
    workflow: CreateWorkflow | UnsetType = UNSET
    """A workflow schedule's new workflow (a job schedule cannot become one)."""

    def to_domain(self) -> schedules.SchedulePatch:
        # The domain patch spells "unchanged" as None, which no wire value can be.
        fields = {name: getattr(self, name) for name in self.__struct_fields__}
        if isinstance(self.workflow, CreateWorkflow):
            fields["workflow"] = self.workflow.to_domain(None)
        return schedules.SchedulePatch(**{name: value for name, value in fields.items() if value is not UNSET})


class Schedule(Struct, kw_only=True):
    """A cron schedule. `next_run_at` is its pending occurrence (null while disabled). A workflow schedule shows
    its `workflow` (`{name, context, steps}`) and null job fields; a job schedule a null `workflow`."""

    id: str
    tenant_id: str
    name: str
    cron: str
    timezone: str
    task_name: str | None
    queue_name: str | None
    payload: JSONObject | None
    priority: int | None
    max_retries: int | None
    enabled: bool
    next_run_at: datetime | None
    last_run_at: datetime | None
    created_at: datetime
    updated_at: datetime
    workflow: JSONObject | None = None
    """Added in 0.2 (issue 31): not `required` in the spec, as an SDK reading an older server does not get it."""

    @classmethod
    def from_domain(cls, schedule: schedules.Schedule) -> Schedule:
        fields = {name: getattr(schedule, name) for name in cls.__struct_fields__ if name != "workflow"}
        workflow = None if schedule.workflow is None else new_workflow_json(schedule.workflow)
        return cls(**fields, workflow=workflow)


class SchedulePage(Struct):
    items: list[Schedule]
    next_cursor: str | None
