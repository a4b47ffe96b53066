"""Tenant routes for push endpoints, addressed by their name: each handler is one engine call."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, delete, get, patch, post
from litestar.params import JSONBody, QueryParameter

from queueflow.api.allow import options_for
from queueflow.api.auth import TENANT, tenant_of
from queueflow.api.body import StrictBody
from queueflow.api.jobs import TENANT_ERRORS
from queueflow.api.problems import problem_responses
from queueflow.api.schemas.endpoints import CreateEndpoint, Endpoint, EndpointNamePath, EndpointPage, UpdateEndpoint
from queueflow.api.services import services_of
from queueflow.engine import MAX_PAGE

# Registered before EndpointsController (see queueflow.api.allow).
endpoints_options = options_for("/endpoints", "GET", "POST")
endpoint_options = options_for("/endpoints/{name:str}", "GET", "PATCH", "DELETE")


class EndpointsController(Controller):
    path = "/endpoints"
    tags = ("endpoints",)
    opt = TENANT

    @post(
        "/",
        operation_id="createEndpoint",
        dto=StrictBody[CreateEndpoint],
        return_dto=None,
        status_code=201,
        responses=problem_responses(400, *TENANT_ERRORS, 409, 413),
    )
    async def create_endpoint(self, request: Request[Any, Any, Any], data: JSONBody[CreateEndpoint]) -> Endpoint:
        """Create a push endpoint; the answer is the only one that shows its secret in full (a taken name is 409)."""
        endpoints = services_of(request).engine.endpoints
        return Endpoint.from_domain(await endpoints.create(tenant_of(request), data.to_domain()), with_secret=True)

    @get("/", operation_id="listEndpoints", responses=problem_responses(400, *TENANT_ERRORS))
    async def list_endpoints(
        self,
        request: Request[Any, Any, Any],
        limit: Annotated[int, QueryParameter(ge=1, le=MAX_PAGE)] = 50,
        cursor: Annotated[str | None, QueryParameter(min_length=1, max_length=512)] = None,
    ) -> EndpointPage:
        """List the tenant's push endpoints, newest first."""
        page = await services_of(request).engine.endpoints.list(tenant_of(request), limit=limit, cursor=cursor)
        return EndpointPage([Endpoint.from_domain(endpoint) for endpoint in page.items], page.next_cursor)

    @get("/{name:str}", operation_id="getEndpoint", responses=problem_responses(400, *TENANT_ERRORS, 404))
    async def get_endpoint(self, request: Request[Any, Any, Any], name: EndpointNamePath) -> Endpoint:
        """Get one push endpoint by name, with its counters."""
        return Endpoint.from_domain(await services_of(request).engine.endpoints.get(tenant_of(request), name))

    @patch(
        "/{name:str}",
        operation_id="updateEndpoint",
        dto=StrictBody[UpdateEndpoint],
        return_dto=None,
        responses=problem_responses(400, *TENANT_ERRORS, 404, 409, 413),
    )
    async def update_endpoint(
        self, request: Request[Any, Any, Any], name: EndpointNamePath, data: JSONBody[UpdateEndpoint]
    ) -> Endpoint:
        """Change some of a push endpoint's settings; pausing stops new deliveries (those in flight finish)."""
        endpoints = services_of(request).engine.endpoints
        return Endpoint.from_domain(await endpoints.update(tenant_of(request), name, data.to_domain()))

    @post(
        "/{name:str}/rotate-secret",
        operation_id="rotateEndpointSecret",
        status_code=200,
        responses=problem_responses(400, *TENANT_ERRORS, 404, 409),
    )
    async def rotate_endpoint_secret(self, request: Request[Any, Any, Any], name: EndpointNamePath) -> Endpoint:
        """Give a push endpoint a new secret, shown in full; for 24 h the previous one signs deliveries too."""
        endpoints = services_of(request).engine.endpoints
        return Endpoint.from_domain(await endpoints.rotate_secret(tenant_of(request), name), with_secret=True)

    @delete("/{name:str}", operation_id="deleteEndpoint", responses=problem_responses(400, *TENANT_ERRORS, 404))
    async def delete_endpoint(self, request: Request[Any, Any, Any], name: EndpointNamePath) -> None:
        """Delete a push endpoint; deliveries in flight finish or expire."""
        await services_of(request).engine.endpoints.delete(tenant_of(request), name)
