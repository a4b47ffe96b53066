"""Tenant routes for triggers (addressed by name, as schedules are) and events: each handler is one engine call."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, delete, get, patch, post
from litestar.params import JSONBody, QueryParameter

from queueflow.api.allow import options_for
from queueflow.api.auth import TENANT, tenant_of
from queueflow.api.body import StrictBody
from queueflow.api.jobs import TENANT_ERRORS
from queueflow.api.problems import problem_responses
from queueflow.api.schemas.triggers import (
    CreateTrigger,
    EventAccepted,
    SendEvent,
    Trigger,
    TriggerNamePath,
    TriggerPage,
    UpdateTrigger,
)
from queueflow.api.services import services_of
from queueflow.engine import MAX_PAGE

# Registered before TriggersController (see queueflow.api.allow).
triggers_options = options_for("/triggers", "GET", "POST")
trigger_options = options_for("/triggers/{name:str}", "GET", "PATCH", "DELETE")


class TriggersController(Controller):
    path = "/triggers"
    tags = ("triggers",)
    opt = TENANT

    @post(
        "/",
        operation_id="createTrigger",
        dto=StrictBody[CreateTrigger],
        return_dto=None,
        status_code=201,
        responses=problem_responses(400, *TENANT_ERRORS, 409, 413),
    )
    async def create_trigger(self, request: Request[Any, Any, Any], data: JSONBody[CreateTrigger]) -> Trigger:
        """Create a trigger: every matching event from now on starts its job or workflow (a taken name is 409)."""
        engine = services_of(request).engine
        return Trigger.from_domain(await engine.triggers.create(tenant_of(request), data.to_domain()))

    @get("/", operation_id="listTriggers", responses=problem_responses(400, *TENANT_ERRORS))
    async def list_triggers(
        self,
        request: Request[Any, Any, Any],
        limit: Annotated[int, QueryParameter(ge=1, le=MAX_PAGE)] = 50,
        cursor: Annotated[str | None, QueryParameter(min_length=1, max_length=512)] = None,
    ) -> TriggerPage:
        """List the tenant's triggers, newest first."""
        engine = services_of(request).engine
        page = await engine.triggers.list(tenant_of(request), limit=limit, cursor=cursor)
        return TriggerPage([Trigger.from_domain(trigger) for trigger in page.items], page.next_cursor)

    @get("/{name:str}", operation_id="getTrigger", responses=problem_responses(400, *TENANT_ERRORS, 404))
    async def get_trigger(self, request: Request[Any, Any, Any], name: TriggerNamePath) -> Trigger:
        """Get one trigger by name."""
        engine = services_of(request).engine
        return Trigger.from_domain(await engine.triggers.get(tenant_of(request), name))

    @patch(
        "/{name:str}",
        operation_id="updateTrigger",
        dto=StrictBody[UpdateTrigger],
        return_dto=None,
        responses=problem_responses(400, *TENANT_ERRORS, 404, 409, 413),
    )
    async def update_trigger(
        self, request: Request[Any, Any, Any], name: TriggerNamePath, data: JSONBody[UpdateTrigger]
    ) -> Trigger:
        """Change some of a trigger's fields; events from then on see it as changed."""
        engine = services_of(request).engine
        return Trigger.from_domain(await engine.triggers.update(tenant_of(request), name, data.to_domain()))

    @delete("/{name:str}", operation_id="deleteTrigger", responses=problem_responses(400, *TENANT_ERRORS, 404))
    async def delete_trigger(self, request: Request[Any, Any, Any], name: TriggerNamePath) -> None:
        """Delete a trigger; what it already started stays."""
        await services_of(request).engine.triggers.delete(tenant_of(request), name)


class EventsController(Controller):
    path = "/events"
    tags = ("events",)
    opt = TENANT

    @post(
        "/",
        operation_id="sendEvent",
        dto=StrictBody[SendEvent],
        return_dto=None,
        status_code=202,
        responses=problem_responses(400, *TENANT_ERRORS, 413),
    )
    async def send_event(self, request: Request[Any, Any, Any], data: JSONBody[SendEvent]) -> EventAccepted:
        """Send an event: every enabled trigger it matches starts, in one transaction (a repeated `id` starts
        nothing again and answers with what it started the first time)."""
        services = services_of(request)
        event, created = await services.engine.triggers.send(tenant_of(request), data.to_domain())
        if created:
            services.metrics.event_received(event)
        return EventAccepted.from_domain(event)
