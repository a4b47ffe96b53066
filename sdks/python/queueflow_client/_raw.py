"""Routes the generated core does not cover yet, sent over the same client with the same two functions a
generated operation has (`sync_detailed`, `asyncio_detailed`), so `_transport.call` treats them alike.

The workflow and schedule routes are described in API.md but were not in spec/openapi.json when this client
was written; once they are, `make sdks` generates their operations and `_calls` should use those instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import httpx

from queueflow_client._generated.client import AuthenticatedClient
from queueflow_client._generated.types import Response


@dataclass(frozen=True, slots=True)
class RawOperation:
    method: str
    path: str
    """With `{}` placeholders for the path parameters, in order."""

    def _request(self, path_args: tuple[str, ...], body: Any, params: Any, headers: Any) -> dict[str, Any]:
        request: dict[str, Any] = {"method": self.method, "url": self.path.format(*path_args)}
        if body is not None:
            request["json"] = body
        if params:
            request["params"] = {key: value for key, value in params.items() if value is not None}
        if headers:
            request["headers"] = {key: value for key, value in headers.items() if value is not None}
        return request

    def sync_detailed(
        self, *path_args: str, client: AuthenticatedClient, body: Any = None, params: Any = None, headers: Any = None
    ) -> Response[Any]:
        response = client.get_httpx_client().request(**self._request(path_args, body, params, headers))
        return _response(response)

    async def asyncio_detailed(
        self, *path_args: str, client: AuthenticatedClient, body: Any = None, params: Any = None, headers: Any = None
    ) -> Response[Any]:
        response = await client.get_async_httpx_client().request(**self._request(path_args, body, params, headers))
        return _response(response)


def _response(response: httpx.Response) -> Response[Any]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=None,
    )
