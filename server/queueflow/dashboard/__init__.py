"""The dashboard: server-rendered pages at /ui over the same `Engine` the API uses.

`DashboardPlugin` is one Litestar plugin: it adds the /ui router (Jinja2 templates, HTMX for the partial
refresh), the vendored static assets at /ui/static, and the redirect from / to /ui; none of it is in the OpenAPI
schema. It also serves the API docs (Redoc at /schema, Swagger UI at /schema/swagger) from the bundles vendored
beside htmx (`apidocs.py`), so no page of the server loads anything from a CDN. Pages read and act only through the
`engine`, their router's one dependency (the tenant is the request's, `web.tenant_of`), as API handlers do through
their `services`.
"""

from __future__ import annotations

from datetime import timedelta

from litestar import Router, get
from litestar.config.app import AppConfig
from litestar.di import Provide
from litestar.plugins import InitPluginProtocol
from litestar.plugins.htmx import HTMXConfig, HTMXPlugin, HTMXRequest
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.response import Redirect
from litestar.static_files import create_static_files_router
from litestar.template import TemplateConfig

from queueflow.dashboard import dead_letters, endpoints, flow, flows, jobs, signin, triggers, workflow_actions
from queueflow.dashboard.apidocs import docs_router, render_plugins
from queueflow.dashboard.look import STATIC, environment
from queueflow.dashboard.session import Signer
from queueflow.dashboard.web import EXCEPTION_HANDLERS, UI, Dashboard, Keys
from queueflow.engine import Engine
from queueflow.ports import Clock
from queueflow.settings import Settings

__all__ = ["DashboardPlugin"]

PAGES = [
    jobs.queues_page,
    flow.queue_page,
    flow.pause_queue,
    flow.resume_queue,
    flow.set_limits,
    jobs.jobs_page,
    jobs.job_page,
    jobs.cancel_job,
    jobs.retry_job,
    jobs.resume_sequence,
    dead_letters.dead_letters_page,
    dead_letters.replay_matching,
    flows.workflows_page,
    flows.workflow_page,
    flows.cancel_workflow,
    workflow_actions.signal_workflow,
    workflow_actions.retry_workflow,
    flows.schedules_page,
    flows.enable_schedule,
    flows.disable_schedule,
    flows.delete_schedule,
    endpoints.endpoints_page,
    endpoints.pause_endpoint,
    endpoints.resume_endpoint,
    endpoints.rotate_endpoint_secret,
    triggers.triggers_page,
    signin.sign_in_page,
    signin.sign_in,
    signin.sign_out,
]


@get("/", include_in_schema=False, name="dashboard-root")
async def root() -> Redirect:
    return Redirect(UI)


class DashboardPlugin(InitPluginProtocol):
    """Mounts the dashboard over `engine`. `keys` tells tenant keys from worker keys (the API's `Keyring`); with no key
    configured (development mode) every request is `default_tenant` and nobody signs in."""

    def __init__(self, engine: Engine, settings: Settings, clock: Clock, keys: Keys, *, default_tenant: str) -> None:
        self.engine = engine
        self.dashboard = Dashboard(
            Signer(settings), keys, clock, default_tenant, timedelta(seconds=settings.horizon_warning_seconds)
        )

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        pages = Router(
            path=UI,
            route_handlers=PAGES,
            before_request=self.dashboard.hook(),  # type: ignore[arg-type]
            exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
            request_class=HTMXRequest,
            include_in_schema=False,
            dependencies={"engine": Provide(lambda: self.engine, use_cache=True, sync_to_thread=False)},
        )
        static = create_static_files_router(
            path=f"{UI}/static", directories=[STATIC], include_in_schema=False, name="dashboard-static"
        )
        app_config.route_handlers.extend([root, pages, static])
        if (docs := app_config.openapi_config) is not None:
            # Set after the config's own __post_init__ (a rebuilt config would warn about deprecated fields).
            docs.render_plugins = render_plugins()
            docs.openapi_router = docs_router(docs.path or "/schema")
            docs.default_plugin = docs.render_plugins[0]
        app_config.template_config = TemplateConfig(instance=JinjaTemplateEngine.from_environment(environment()))
        # The API keeps Litestar's plain Request; only the dashboard's router uses HTMXRequest.
        app_config.plugins.append(HTMXPlugin(HTMXConfig(set_request_class_globally=False)))
        return app_config
