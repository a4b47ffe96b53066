"""OPTIONS answers for paths whose methods are served by separate handlers.

Litestar's automatic OPTIONS answer then lists only one of the methods (schemathesis flags it). `options_for`
builds an explicit handler instead; registered before the path's other handlers, it takes the automatic one's place.
"""

from __future__ import annotations

from litestar import Response, route
from litestar.enums import HttpMethod
from litestar.handlers import HTTPRouteHandler


def options_for(path: str, *methods: str) -> HTTPRouteHandler:
    """An OPTIONS handler for `path` whose `Allow` header names `methods` and OPTIONS itself."""
    allowed = ", ".join(sorted({*methods, "OPTIONS"}))

    async def options() -> Response[None]:
        return Response(None, status_code=204, headers={"Allow": allowed})

    return route(
        path,
        http_method=[HttpMethod.OPTIONS],
        include_in_schema=False,
        opt={"credential": "none"},
        name=f"options:{path}",
    )(options)
