"""Tenant routes for cron schedules, addressed by their name: each handler is one engine call."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, delete, get, patch, post
from litestar.params import JSONBody, QueryParameter

from queueflow.api.allow import options_for
from queueflow.api.auth import TENANT, tenant_of
from queueflow.api.body import StrictBody
from queueflow.api.jobs import TENANT_ERRORS
from queueflow.api.problems import problem_responses
from queueflow.api.schemas.schedules import CreateSchedule, Schedule, ScheduleNamePath, SchedulePage, UpdateSchedule
from queueflow.api.services import services_of
from queueflow.engine import MAX_PAGE

# Registered before SchedulesController (see queueflow.api.allow).
schedules_options = options_for("/schedules", "GET", "POST")
schedule_options = options_for("/schedules/{name:str}", "GET", "PATCH", "DELETE")


class SchedulesController(Controller):
    path = "/schedules"
    tags = ("schedules",)
    opt = TENANT

    @post(
        "/",
        operation_id="createSchedule",
        dto=StrictBody[CreateSchedule],
        return_dto=None,
        status_code=201,
        responses=problem_responses(400, *TENANT_ERRORS, 409, 413),
    )
    async def create_schedule(self, request: Request[Any, Any, Any], data: JSONBody[CreateSchedule]) -> Schedule:
        """Create a cron schedule; it first fires at its next occurrence (a taken name is 409)."""
        services = services_of(request)
        return Schedule.from_domain(await services.engine.create_schedule(tenant_of(request), data.to_domain()))

    @get("/", operation_id="listSchedules", responses=problem_responses(400, *TENANT_ERRORS))
    async def list_schedules(
        self,
        request: Request[Any, Any, Any],
        limit: Annotated[int, QueryParameter(ge=1, le=MAX_PAGE)] = 50,
        cursor: Annotated[str | None, QueryParameter(min_length=1, max_length=512)] = None,
    ) -> SchedulePage:
        """List the tenant's schedules, newest first."""
        services = services_of(request)
        page = await services.engine.list_schedules(tenant_of(request), limit=limit, cursor=cursor)
        return SchedulePage([Schedule.from_domain(schedule) for schedule in page.items], page.next_cursor)

    @get("/{name:str}", operation_id="getSchedule", responses=problem_responses(400, *TENANT_ERRORS, 404))
    async def get_schedule(self, request: Request[Any, Any, Any], name: ScheduleNamePath) -> Schedule:
        """Get one schedule by name."""
        services = services_of(request)
        return Schedule.from_domain(await services.engine.get_schedule(tenant_of(request), name))

    @patch(
        "/{name:str}",
        operation_id="updateSchedule",
        dto=StrictBody[UpdateSchedule],
        return_dto=None,
        responses=problem_responses(400, *TENANT_ERRORS, 404, 409, 413),
    )
    async def update_schedule(
        self,
        request: Request[Any, Any, Any],
        name: ScheduleNamePath,
        data: JSONBody[UpdateSchedule],
    ) -> Schedule:
        """Change some of a schedule's fields; a new cron, time zone or re-enabling starts from now."""
        services = services_of(request)
        return Schedule.from_domain(await services.engine.update_schedule(tenant_of(request), name, data.to_domain()))

    @delete("/{name:str}", operation_id="deleteSchedule", responses=problem_responses(400, *TENANT_ERRORS, 404))
    async def delete_schedule(self, request: Request[Any, Any, Any], name: ScheduleNamePath) -> None:
        """Delete a schedule; the jobs it already inserted stay."""
        services = services_of(request)
        await services.engine.delete_schedule(tenant_of(request), name)
