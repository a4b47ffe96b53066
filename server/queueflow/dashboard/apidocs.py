"""The API docs' pages, on the browser assets vendored beside htmx (`static/VENDORED.md`): Redoc at `/schema` (and
`/schema/redoc`) to read, Swagger UI at `/schema/swagger` to try calls out with a key. Neither page loads anything
from another host: no CDN, no Google Fonts, no remote favicon, no Swagger validator badge; and their
Content-Security-Policy lets the browser fetch from this server only, so a request a bundle makes on its own
(Redoc's footer logo) is never sent."""

from __future__ import annotations

import html
from typing import Any

from litestar import Request, Router
from litestar.datastructures import ResponseHeader
from litestar.openapi.plugins import OpenAPIRenderPlugin, RedocRenderPlugin
from litestar.serialization import encode_json

STATIC = "/ui/static"
FAVICON = f"<link rel='icon' type='image/svg+xml' href='{STATIC}/favicon.svg'>"
# Inline script and style: both pages start their bundle with an inline script holding the spec, and both bundles
# style with inline <style>; Redoc's search runs in a worker made from a blob.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


def docs_router(path: str) -> Router:
    """The router Litestar fills with the docs' pages and `openapi.json`, every answer under the policy above."""
    return Router(
        path,
        route_handlers=[],
        include_in_schema=False,
        dto=None,
        return_dto=None,
        response_headers=[ResponseHeader(name="Content-Security-Policy", value=CONTENT_SECURITY_POLICY)],
    )


def render_plugins() -> list[OpenAPIRenderPlugin]:
    """Redoc first: it is what `/schema` shows."""
    redoc = RedocRenderPlugin(js_url=f"{STATIC}/redoc.standalone.js", google_fonts=False, favicon=FAVICON)
    return [redoc, OfflineSwagger()]


class OfflineSwagger(OpenAPIRenderPlugin):
    """Swagger UI's bundle alone (its standalone preset adds only a top bar that loads specs by URL)."""

    def __init__(self) -> None:
        super().__init__(path="/swagger", favicon=FAVICON)

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        options = {
            "dom_id": "#swagger-ui",
            "deepLinking": True,
            "layout": "BaseLayout",
            "validatorUrl": None,  # else the page would ask validator.swagger.io about the spec
            # No persistAuthorization: a key given to "Authorize" stays in the page, never in localStorage.
            "tryItOutEnabled": True,
        }
        head = (
            f"<!DOCTYPE html><html><head><title>{html.escape(openapi_schema['info']['title'])}</title>{self.favicon}"
            "<meta charset='utf-8'/><meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<link href='{STATIC}/swagger-ui.css' rel='stylesheet'>{self.style}</head>"
            f"<body><div id='swagger-ui'></div><script src='{STATIC}/swagger-ui-bundle.js'></script>"
        )
        return b"".join(
            [
                head.encode(),
                b"<script>const options = ",
                encode_json(options),
                b"; options.spec = ",
                self.render_json(request, openapi_schema),
                b"; options.presets = [SwaggerUIBundle.presets.apis]; window.ui = SwaggerUIBundle(options);",
                b"</script></body></html>",
            ]
        )
